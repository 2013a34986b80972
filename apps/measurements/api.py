"""Measured runs REST API: the runs a user may read (theirs and their teams') with the engine against each,
a CSV import (all rows or none), a log excerpt parser (its own view, which a read-only token may call: it
saves nothing), moving a run into a team, and per holder (the user, or a team) the summary by regime and the
calibration switch."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.measurements import selectors, services
from apps.measurements.logs import log_parse
from apps.measurements.models import MeasuredRun
from apps.measurements.serializers import (
    CalibrationSerializer,
    CsvImportSerializer,
    LogInputSerializer,
    MeasuredRunInputSerializer,
    MeasuredRunSerializer,
    ParsedLogSerializer,
    SummarySerializer,
    TeamQuerySerializer,
)
from apps.teams.params import team_param, team_writable
from apps.teams.serializers import TeamMoveSerializer
from clusterdesigner.api import ErrorSerializer
from clusterdesigner.errors import InvalidInput
from clusterdesigner.parsers import JSONParser
from clusterdesigner.views import or_404

ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="Bad input; fields name what is wrong."),
    401: OpenApiResponse(ErrorSerializer, description="Not signed in."),
    404: OpenApiResponse(
        ErrorSerializer, description="No such run or team of yours (or you may only read it)."
    ),
}
TEAM_QUERY = [TeamQuerySerializer]


def _holder(request: Request, team_id: int | None, *, edit: bool = False) -> selectors.Holder:
    """The user's own runs and switch, or the team's: 404 for a team they are not in (or, to write, do not
    own or edit), as the ownership rule answers."""
    return or_404(selectors.holder_get(user=request.user, team_id=team_id, edit=edit))


def _team_query(request: Request) -> int | None:
    # Not DRF's reading of the query, which takes ``?team=`` as absent: the schema allows no empty value, and
    # omitting team means "your own", an empty one does not (schemathesis found it answered 200).
    return team_param(request.query_params.get("team"))


@extend_schema_view(
    list=extend_schema(parameters=TEAM_QUERY, responses={200: MeasuredRunSerializer(many=True), **ERRORS}),
    retrieve=extend_schema(responses={200: MeasuredRunSerializer, **ERRORS}),
    destroy=extend_schema(responses={204: None, **ERRORS}),
)
class MeasuredRunViewSet(viewsets.ModelViewSet[MeasuredRun]):
    """Measured training runs, each beside the engine's estimate of it. A run is its owner's, or a team's
    (apps/teams/access.py): the team's members read it, its owners and editors change it; anyone else 404.
    ``?team=<id>`` lists one team's runs; the summary and the calibration switch are per holder likewise."""

    serializer_class = MeasuredRunSerializer
    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [JSONParser]
    ordering_fields = ["measured_on", "created_at", "nodes"]
    lookup_value_regex = r"[0-9]{1,18}"
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):
            return MeasuredRun.objects.none()
        if self.action == "list" and (team_id := _team_query(self.request)) is not None:
            return _holder(self.request, team_id).runs().select_related("team")
        return selectors.run_list(user=self.request.user)

    def get_object(self) -> MeasuredRun:
        """A member reads a run; changing, moving or deleting it is for those who edit it (404 otherwise)."""
        run_id = int(self.kwargs["pk"])
        if self.request.method in permissions.SAFE_METHODS:
            return or_404(selectors.run_get(user=self.request.user, run_id=run_id))
        return or_404(selectors.run_get_editable(user=self.request.user, run_id=run_id))

    def _out(self, runs: list[MeasuredRun], many: bool = True) -> Any:
        rows = {row.run.pk: row for row in selectors.run_rows(runs=runs)}
        return MeasuredRunSerializer(runs if many else runs[0], many=many, context={"rows": rows}).data

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response(self._out(list(page or [])))

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return Response(self._out([self.get_object()], many=False))

    @extend_schema(request=MeasuredRunInputSerializer, responses={201: MeasuredRunSerializer, **ERRORS})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        form = MeasuredRunInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = dict(form.validated_data)
        team_id = team_writable(user=request.user, team_id=data.pop("team", None))
        run = services.run_create(owner=request.user, team_id=team_id, data=data)
        return Response(self._out([run], many=False), status=status.HTTP_201_CREATED)

    @extend_schema(request=MeasuredRunInputSerializer, responses={200: MeasuredRunSerializer, **ERRORS})
    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        run = self.get_object()
        form = MeasuredRunInputSerializer(run, data=request.data, partial=True)
        form.is_valid(raise_exception=True)
        if "team" in form.validated_data:
            raise InvalidInput({"team": ["a run moves into a team with POST .../move/"]})
        run = services.run_update(run=run, data=form.validated_data)
        return Response(self._out([run], many=False))

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        services.run_delete(run=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=TeamMoveSerializer, responses={200: MeasuredRunSerializer, **ERRORS})
    @action(detail=True, methods=["post"])
    def move(self, request: Request, pk: str) -> Response:
        """Move a run you may edit into a team you own or edit: it then calibrates the team's designs, not
        its previous holder's."""
        run = self.get_object()
        form = TeamMoveSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        run = services.run_move(user=request.user, run=run, team_id=form.validated_data["team"])
        return Response(self._out([run], many=False))

    @extend_schema(request=CsvImportSerializer, responses={201: MeasuredRunSerializer(many=True), **ERRORS})
    @action(detail=False, methods=["post"], url_path="import")
    def import_csv(self, request: Request) -> Response:
        """Import runs from CSV text (a header row of the run's field names): every row saved, or none."""
        form = CsvImportSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        team_id = team_writable(user=request.user, team_id=form.validated_data.get("team"))
        runs = services.runs_import_csv(owner=request.user, team_id=team_id, text=form.validated_data["csv"])
        return Response(self._out(runs), status=status.HTTP_201_CREATED)

    @extend_schema(parameters=TEAM_QUERY, responses={200: SummarySerializer, **ERRORS})
    @action(detail=False, methods=["get"])
    def summary(self, request: Request) -> Response:
        """The errors of your own runs (or, with ``?team=``, the team's) against the engine, all then by
        regime (median and p90 of |error|, share inside the band), and the factors fitted on them."""
        holder = _holder(request, _team_query(request))
        return Response(SummarySerializer(selectors.summary_get(holder=holder)).data)

    @extend_schema(request=CalibrationSerializer, responses={200: SummarySerializer, **ERRORS})
    @action(detail=False, methods=["post"])
    def calibration(self, request: Request) -> Response:
        """Switch your calibration (for your personal designs) or, with ``team``, the team's (for the team's
        designs; its owners and editors) on or off."""
        form = CalibrationSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        holder = _holder(request, form.validated_data.get("team"), edit=True)
        services.calibration_set(
            owner_id=holder.owner_id, team_id=holder.team_id, enabled=form.validated_data["enabled"]
        )
        return Response(SummarySerializer(selectors.summary_get(holder=holder)).data)


class LogParseView(APIView):
    """The figures of a Megatron-LM, NeMo or torchtitan log excerpt; nothing is saved."""

    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [JSONParser]
    token_scope = "read"  # a read-only API token may ask: nothing is written

    @extend_schema(request=LogInputSerializer, responses={200: ParsedLogSerializer, **ERRORS})
    def post(self, request: Request) -> Response:
        form = LogInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        return Response(ParsedLogSerializer(log_parse(text=form.validated_data["log"]).to_json()).data)
