"""Price book REST API: the entries of the user and of their teams (list, create, read, replace, change,
delete). Team members read a team's entries, its owners and editors change them; nobody else sees them
(404)."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from apps.pricebook import files, selectors, services
from apps.pricebook.serializers import (
    PriceBookExportQuerySerializer,
    PriceBookImportResultSerializer,
    PriceBookImportSerializer,
    PriceEntrySerializer,
)
from apps.teams.params import team_param
from clusterdesigner.api import ErrorSerializer, FileNegotiation
from clusterdesigner.parsers import FormParser, JSONParser, MultiPartParser
from clusterdesigner.views import or_404

XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="Bad input; fields name what is wrong."),
    401: OpenApiResponse(ErrorSerializer, description="Not signed in."),
    404: OpenApiResponse(ErrorSerializer, description="No such entry of yours or of your teams."),
}


@extend_schema_view(
    list=extend_schema(responses={200: PriceEntrySerializer(many=True), **ERRORS}),
    retrieve=extend_schema(responses={200: PriceEntrySerializer, **ERRORS}),
    create=extend_schema(request=PriceEntrySerializer, responses={201: PriceEntrySerializer, **ERRORS}),
    update=extend_schema(request=PriceEntrySerializer, responses={200: PriceEntrySerializer, **ERRORS}),
    partial_update=extend_schema(
        request=PriceEntrySerializer, responses={200: PriceEntrySerializer, **ERRORS}
    ),
    destroy=extend_schema(responses={204: None, **ERRORS}),
)
class PriceEntryViewSet(viewsets.ModelViewSet[Any]):
    """Dated prices of your own and your teams' (server quotes, cloud discounts and private rates, power and
    colocation) that a design uses before the public catalog; see each evaluation's ``prices.*`` assumptions
    for which figure came from where."""

    serializer_class = PriceEntrySerializer
    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [JSONParser]
    ordering_fields = ["kind", "valid_from", "expires_on", "entered_at"]
    search_fields = ["source", "accelerator", "offering", "provider"]
    lookup_value_regex = r"[0-9]{1,18}"

    def get_queryset(self) -> Any:
        return selectors.price_entry_list(user=self.request.user)

    def get_object(self) -> Any:
        """Read access for a read; edit access for a change (a team viewer's change is a 404, as for an entry
        they cannot see)."""
        entry_id = int(self.kwargs["pk"])
        entry = or_404(selectors.price_entry_get(user=self.request.user, entry_id=entry_id))
        if self.request.method not in permissions.SAFE_METHODS:
            entry = or_404(selectors.price_entry_get_editable(user=self.request.user, entry_id=entry_id))
        return entry

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        entry = services.price_entry_create(user=request.user, data=request.data)
        return Response(PriceEntrySerializer(entry).data, status=status.HTTP_201_CREATED)

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        entry = services.price_entry_update(entry=self.get_object(), data=request.data)
        return Response(PriceEntrySerializer(entry).data)

    def perform_destroy(self, instance: Any) -> None:
        services.price_entry_delete(entry=instance)

    @extend_schema(
        request={"multipart/form-data": PriceBookImportSerializer},
        responses={201: PriceBookImportResultSerializer, **ERRORS},
        description=(
            "Import price book entries from CSV or XLSX (its first sheet), into your own book or a team's"
            " (team: one where you are an owner or editor). Every row is checked as an entry made through"
            " this API; if any is bad, nothing is imported and each bad cell is named by its row and column:"
            " the CSV's line (line 3.value) or the sheet's row (row 3.value)."
        ),
    )
    @action(detail=False, methods=["post"], url_path="import", parser_classes=[MultiPartParser, FormParser])
    def import_file(self, request: Request) -> Response:
        form = PriceBookImportSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        saved = services.price_entry_import(
            user=request.user, content=form.validated_data["file"], team=form.validated_data.get("team")
        )
        return Response({"imported": len(saved)}, status=status.HTTP_201_CREATED)

    @extend_schema(
        filters=False,
        parameters=[PriceBookExportQuerySerializer],
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, XLSX_TYPE): OpenApiTypes.BINARY,
            **ERRORS,
        },
        description=(
            "Your own price book (or a team's you are a member of) as CSV or XLSX in the import's columns:"
            " importing the file gives the same entries."
        ),
    )
    @action(
        detail=False,
        methods=["get"],
        url_path="export",
        content_negotiation_class=FileNegotiation,
        pagination_class=None,
        filter_backends=[],
    )
    def export(self, request: Request) -> HttpResponse:
        query = PriceBookExportQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        team = team_param(request.query_params.get("team"))  # ?team= empty is a 400, as everywhere
        entries = or_404(selectors.price_book_entries(user=request.user, team_id=team))
        name = f"price-book-team-{team}" if team else f"price-book-{request.user.get_username()}"
        if query.validated_data["format"] == "xlsx":
            response = HttpResponse(files.book_xlsx(entries, title=name), content_type=XLSX_TYPE)
            response["Content-Disposition"] = f'attachment; filename="{name}.xlsx"'
        else:
            response = HttpResponse(files.book_csv(entries), content_type="text/csv; charset=utf-8")
            response["Content-Disposition"] = f'attachment; filename="{name}.csv"'
        return response
