"""Teams REST API: my teams, a team's details and its members. Members read; owners manage."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from apps.teams import selectors, services
from apps.teams.models import Team
from apps.teams.serializers import (
    MemberInputSerializer,
    MemberRoleSerializer,
    MembershipSerializer,
    TeamInputSerializer,
    TeamSerializer,
)
from clusterdesigner.api import ErrorSerializer
from clusterdesigner.ids import as_id
from clusterdesigner.parsers import JSONParser
from clusterdesigner.views import or_404

ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="Bad input; fields name what is wrong."),
    401: OpenApiResponse(ErrorSerializer, description="Not signed in."),
    404: OpenApiResponse(ErrorSerializer, description="No such team of yours (or you are not its owner)."),
}


def _id(raw: Any) -> int:
    """An id from the URL; anything but a whole number a database key can hold is no such object (404)."""
    value = as_id(str(raw))
    if value is None:
        raise Http404
    return value


@extend_schema_view(
    list=extend_schema(
        responses={
            200: TeamSerializer(many=True),
            400: ERRORS[400],
            401: ERRORS[401],
            404: OpenApiResponse(ErrorSerializer, description="No such page (?page=0, or past the last)."),
        }
    ),
    retrieve=extend_schema(responses={200: TeamSerializer, **ERRORS}),
)
class TeamViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet[Any]):
    """Teams you belong to. Whoever creates a team is its first owner; owners rename it and manage its
    members (a team always keeps at least one owner). Designs and capacity plans move into a team with their
    own ``move`` action."""

    serializer_class = TeamSerializer
    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [JSONParser]
    ordering_fields = ["name", "created_at"]
    search_fields = ["name"]

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):
            return Team.objects.none()
        return selectors.team_list(user=self.request.user).select_related("created_by")

    def get_object(self) -> Team:
        """Members read a team; changing it or its members is for its owners (404 for anyone else)."""
        team_id = _id(self.kwargs["pk"])
        team = or_404(selectors.team_get(user=self.request.user, team_id=team_id))
        if self.request.method not in permissions.SAFE_METHODS:
            team = or_404(selectors.team_get_administered(user=self.request.user, team_id=team_id))
        return team

    def _respond(self, team: Team, code: int = 200) -> Response:
        fresh = selectors.team_get(user=self.request.user, team_id=team.pk)
        return Response(TeamSerializer(fresh, context={"request": self.request}).data, status=code)

    @extend_schema(request=TeamInputSerializer, responses={201: TeamSerializer, **ERRORS})
    def create(self, request: Request) -> Response:
        form = TeamInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        team = services.team_create(user=request.user, **form.validated_data)
        return self._respond(team, status.HTTP_201_CREATED)

    @extend_schema(request=TeamInputSerializer, responses={200: TeamSerializer, **ERRORS})
    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        team = self.get_object()
        form = TeamInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        return self._respond(services.team_rename(team=team, **form.validated_data))

    @extend_schema(filters=False, responses={200: MembershipSerializer(many=True), **ERRORS}, methods=["get"])
    @extend_schema(
        request=MemberInputSerializer, responses={201: MembershipSerializer, **ERRORS}, methods=["post"]
    )
    @action(detail=True, methods=["get", "post"])
    def members(self, request: Request, pk: str) -> Response:
        """GET: the team's members and roles (any member). POST: add a member by username or e-mail with a
        role (owners only)."""
        team = self.get_object()
        if request.method == "GET":
            members = team.memberships.select_related("user").order_by("user__username", "id")
            page = self.paginate_queryset(members)
            return self.get_paginated_response(MembershipSerializer(page, many=True).data)
        form = MemberInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        membership = services.member_add(
            team=team, identifier=form.validated_data["user"], role=form.validated_data["role"]
        )
        return Response(MembershipSerializer(membership).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=MemberRoleSerializer, responses={200: MembershipSerializer, **ERRORS}, methods=["patch"]
    )
    @extend_schema(request=None, responses={204: None, **ERRORS}, methods=["delete"])
    @action(detail=True, methods=["patch", "delete"], url_path=r"members/(?P<user_id>[0-9]{1,18})")
    def member(self, request: Request, pk: str, user_id: str) -> Response:
        """PATCH: change a member's role. DELETE: remove a member. Owners only; the last owner can neither
        stop being one nor be removed (400)."""
        team = self.get_object()
        membership = team.memberships.select_related("user").filter(user_id=_id(user_id)).first()
        if membership is None:
            raise Http404("No such member of this team.")
        if request.method == "DELETE":
            services.member_remove(membership=membership)
            return Response(status=status.HTTP_204_NO_CONTENT)
        form = MemberRoleSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        membership = services.member_set_role(membership=membership, role=form.validated_data["role"])
        return Response(MembershipSerializer(membership).data)
