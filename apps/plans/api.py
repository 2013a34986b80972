"""Capacity plans REST API: the owner's plans with versions, and a synchronous solve."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from apps.plans import selectors, services
from apps.plans.exports import XLSX, plan_xlsx
from apps.plans.models import PlanRun, PlanSolution
from apps.plans.serializers import (
    PlanInputSerializer,
    PlanRunSerializer,
    PlanSerializer,
    PlanShareLinkCreatedSerializer,
    PlanShareLinkInputSerializer,
    PlanShareLinkSerializer,
    PlanSolutionSerializer,
    PlanUpdateSerializer,
    PlanVersionSerializer,
)
from apps.teams import services as team_services
from apps.teams.serializers import TeamMoveSerializer
from clusterdesigner.api import ErrorSerializer
from clusterdesigner.engine.capacity.capacity import PlanResult
from clusterdesigner.errors import Conflict
from clusterdesigner.parsers import JSONParser
from clusterdesigner.views import or_404

ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="Bad input; fields name what is wrong."),
    401: OpenApiResponse(ErrorSerializer, description="Not signed in."),
    404: OpenApiResponse(ErrorSerializer, description="No such plan of yours."),
}
LIST_ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="A bad page or ordering; fields name it."),
    401: ERRORS[401],
    404: OpenApiResponse(ErrorSerializer, description="No such page."),
}
TOO_LARGE = {413: OpenApiResponse(ErrorSerializer, description="Request body over the size limit.")}


@extend_schema_view(
    list=extend_schema(responses={200: PlanSerializer(many=True), **LIST_ERRORS}),
    retrieve=extend_schema(responses={200: PlanSerializer, **ERRORS}),
    destroy=extend_schema(responses={204: None, **ERRORS}),
)
class CapacityPlanViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet[Any]
):
    """Capacity plans: workloads over months and the capacity to buy. The owner sees a plan, or its team's
    members (viewers read and solve, editors change, owners delete)."""

    serializer_class = PlanSerializer
    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [JSONParser]
    ordering_fields = ["updated_at", "created_at", "name"]
    search_fields = ["name", "description"]
    lookup_value_regex = r"[0-9]{1,18}"

    def get_queryset(self) -> Any:
        return selectors.plan_list(user=self.request.user)

    def get_object(self) -> Any:
        """The plan for this request (apps/teams/access.py): reading and solving need read access, deleting
        needs admin, editing and share links need edit; anything less is a 404."""
        plan_id = int(self.kwargs["pk"])
        if self.action == "destroy":
            return or_404(selectors.plan_get_administered(user=self.request.user, plan_id=plan_id))
        if self.action in {"partial_update", "update", "share_links", "move"}:
            return or_404(selectors.plan_get_editable(user=self.request.user, plan_id=plan_id))
        return or_404(selectors.plan_get(user=self.request.user, plan_id=plan_id))

    @extend_schema(request=PlanInputSerializer, responses={201: PlanSerializer, **ERRORS, **TOO_LARGE})
    def create(self, request: Request) -> Response:
        form = PlanInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        plan = services.plan_create(owner=request.user, **form.validated_data)
        return Response(PlanSerializer(plan).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=PlanUpdateSerializer, responses={200: PlanSerializer, **ERRORS, **TOO_LARGE})
    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        plan = self.get_object()
        form = PlanUpdateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        plan = services.plan_update(plan=plan, user=request.user, **form.validated_data)
        return Response(PlanSerializer(plan).data)

    @extend_schema(request=PlanUpdateSerializer, responses={200: PlanSerializer, **ERRORS, **TOO_LARGE})
    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """The same as PATCH: fields left out keep their value; a new spec makes a new version."""
        return self.partial_update(request, *args, **kwargs)

    def perform_destroy(self, instance: Any) -> None:
        services.plan_delete(plan=instance)

    @extend_schema(
        request=TeamMoveSerializer,
        responses={200: PlanSerializer, **ERRORS},
        description="Move the plan into a team: for those who may edit it and are an owner or editor of that "
        "team (400 naming team otherwise).",
    )
    @action(detail=True, methods=["post"])
    def move(self, request: Request, pk: str) -> Response:
        plan = self.get_object()  # edit access, or 404
        form = TeamMoveSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        team_services.owned_move(user=request.user, obj=plan, team_id=form.validated_data["team"])
        return Response(PlanSerializer(plan).data)

    @extend_schema(filters=False, responses={200: PlanVersionSerializer(many=True), **ERRORS})
    @action(detail=True, methods=["get"])
    def versions(self, request: Request, pk: str) -> Response:
        page = self.paginate_queryset(self.get_object().versions.all())
        return self.get_paginated_response(PlanVersionSerializer(page, many=True).data)

    @extend_schema(
        request=None,
        parameters=[OpenApiParameter("version", int, description="Version to solve (default: current).")],
        responses={
            200: PlanSolutionSerializer,
            202: PlanRunSerializer,
            **ERRORS,
            422: OpenApiResponse(
                ErrorSerializer,
                description="code solver_limit: the solver stopped at its work limit before it found any "
                "plan (not shown infeasible).",
            ),
        },
        description=(
            "The cheapest mix of owned, reserved, on-demand and spot capacity that serves the plan and meets "
            "every deadline, solved as a MILP (HiGHS); the same input returns the stored result. A small "
            "plan is solved now (200); a large one is queued to a worker (202 with the run's URL). A solve "
            "stopped at its work limit (PLAN_SOLVE_NODE_LIMIT nodes) returns the best plan found, with "
            "result.solver_status work_limit and a message giving its nodes, cost and gap."
        ),
    )
    @action(detail=True, methods=["post"])
    def solve(self, request: Request, pk: str) -> Response:
        outcome = services.plan_solve_start(version=self._version(request), user=request.user)
        if isinstance(outcome, PlanSolution):
            return Response(PlanSolutionSerializer(outcome).data)
        run = PlanRun.objects.select_related("version", "solution__version").get(pk=outcome.pk)
        return Response(PlanRunSerializer(run).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses={200: PlanRunSerializer, **ERRORS})
    @action(detail=True, methods=["get"], url_path=r"runs/(?P<run_id>[0-9]{1,18})")
    def run(self, request: Request, pk: str, run_id: str) -> Response:
        return Response(
            PlanRunSerializer(
                or_404(selectors.plan_run_get(user=request.user, plan_id=int(pk), run_id=int(run_id)))
            ).data
        )

    @extend_schema(
        parameters=[OpenApiParameter("version", int, description="Version (default: current).")],
        responses={
            (200, XLSX): OpenApiTypes.BINARY,
            **ERRORS,
            409: OpenApiResponse(
                ErrorSerializer,
                description="Not solved yet and too large to solve in the request: a worker is solving it "
                "(the message names the run); download again when it has finished.",
            ),
        },
        description="The solved plan as an XLSX workbook: summary, months, purchases, reservations, runs. A "
        "stored or small plan's; a large one is never solved in the request (gunicorn's 30 s timeout).",
    )
    @action(detail=True, methods=["get"])
    def xlsx(self, request: Request, pk: str) -> HttpResponse:
        version = self._version(request)
        solution = services.plan_solve_start(version=version, user=request.user)
        if isinstance(solution, PlanRun):
            url = reverse("capacity-plan-run", kwargs={"pk": version.plan_id, "run_id": solution.pk})
            raise Conflict(
                f"this plan is too large to solve in the request: run {solution.pk} ({solution.status}) "
                f"solves it on a worker; download the XLSX when it has finished ({url})"
            )
        body = plan_xlsx(
            name=version.plan.name, version=version.number, result=PlanResult.from_json(solution.result)
        )
        response = HttpResponse(body, content_type=XLSX)
        response["Content-Disposition"] = (
            f'attachment; filename="plan-{version.plan_id}-v{version.number}.xlsx"'
        )
        return response

    @extend_schema(
        request=PlanShareLinkInputSerializer,
        responses={201: PlanShareLinkCreatedSerializer, **ERRORS, **TOO_LARGE},
        description="A read-only link (for finance) to the current version's solution, frozen now.",
    )
    @action(detail=True, methods=["post"], url_path="share-links")
    def share_links(self, request: Request, pk: str) -> Response:
        form = PlanShareLinkInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        link, token = services.plan_share_link_create(
            plan=self.get_object(), user=request.user, **form.validated_data
        )
        data = dict(PlanShareLinkSerializer(link).data)
        data.update(token=token, url=request.build_absolute_uri(reverse("plans:share", args=[token])))
        return Response(data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: PlanShareLinkSerializer, **ERRORS})
    @action(detail=True, methods=["post"], url_path=r"share-links/(?P<link_id>[0-9]{1,18})/revoke")
    def revoke_share_link(self, request: Request, pk: str, link_id: str) -> Response:
        link = or_404(selectors.plan_share_link_get(user=request.user, plan_id=int(pk), link_id=int(link_id)))
        return Response(PlanShareLinkSerializer(services.plan_share_link_revoke(link=link)).data)

    def _version(self, request: Request) -> Any:
        raw = request.query_params.get("version")
        if raw is not None and not raw.isdigit():
            raise ValidationError({"version": ["must be a version number"]})
        return or_404(selectors.plan_version_get(plan=self.get_object(), number=int(raw) if raw else None))
