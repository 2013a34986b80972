"""Sites REST API: the owner's sites (list, create, read, replace, change, delete); no one else's."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import permissions, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from apps.sites import selectors, services
from apps.sites.serializers import SiteSerializer
from clusterdesigner.api import ErrorSerializer
from clusterdesigner.parsers import JSONParser
from clusterdesigner.views import or_404

ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="Bad input; fields name what is wrong."),
    401: OpenApiResponse(ErrorSerializer, description="Not signed in."),
    404: OpenApiResponse(ErrorSerializer, description="No such site of yours."),
}


@extend_schema_view(
    list=extend_schema(responses={200: SiteSerializer(many=True), **ERRORS}),
    retrieve=extend_schema(responses={200: SiteSerializer, **ERRORS}),
    create=extend_schema(request=SiteSerializer, responses={201: SiteSerializer, **ERRORS}),
    update=extend_schema(request=SiteSerializer, responses={200: SiteSerializer, **ERRORS}),
    partial_update=extend_schema(request=SiteSerializer, responses={200: SiteSerializer, **ERRORS}),
    destroy=extend_schema(responses={204: None, **ERRORS}),
)
class SiteViewSet(viewsets.ModelViewSet[Any]):
    """Sites a design can be placed in: power and colocation prices, PUE, rack limit, cooling, MW. A design
    names one by ``spec.site.id``. A personal site is its owner's; a team's site its members' (owners and
    editors change it); no one else sees it."""

    serializer_class = SiteSerializer
    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [JSONParser]
    ordering_fields = ["name", "created_at", "updated_at"]
    search_fields = ["name"]
    lookup_value_regex = r"[0-9]{1,18}"

    def get_queryset(self) -> Any:
        return selectors.site_list(user=self.request.user)

    def get_object(self) -> Any:
        """The site this user may read (GET), or change and delete (other methods): 404 otherwise."""
        site_id = int(self.kwargs["pk"])
        if self.request.method in permissions.SAFE_METHODS:
            return or_404(selectors.site_get(user=self.request.user, site_id=site_id))
        return or_404(selectors.site_get_editable(user=self.request.user, site_id=site_id))

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        site = services.site_create(owner=request.user, data=request.data)
        return Response(SiteSerializer(site).data, status=status.HTTP_201_CREATED)

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        partial = bool(kwargs.get("partial"))
        site = services.site_update(site=self.get_object(), data=request.data, partial=partial)
        return Response(SiteSerializer(site).data)

    def perform_destroy(self, instance: Any) -> None:
        services.site_delete(site=instance)
