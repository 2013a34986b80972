"""Catalog REST API: anyone reads, staff write."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, TypeVar

from django.db.models import Model
from django.http import HttpResponse, HttpResponseNotModified
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from apps.catalog import filters, models, selectors, serializers, services
from clusterdesigner import fastpath, memo
from clusterdesigner.api import ErrorSerializer
from clusterdesigner.parsers import FormParser, JSONParser, MultiPartParser

ERRORS = {
    400: OpenApiResponse(
        ErrorSerializer, description="Bad input (or a bad filter); fields name what is wrong."
    ),
    401: OpenApiResponse(ErrorSerializer, description="Not signed in: only staff write the catalog."),
    403: OpenApiResponse(
        ErrorSerializer, description="Signed in but not staff: only staff write the catalog."
    ),
    404: OpenApiResponse(ErrorSerializer, description="No such entry (or, on a list, no such page)."),
    409: OpenApiResponse(
        ErrorSerializer,
        description="A design, plan, sweep, default or other catalog entry uses this one: retire it instead.",
    ),
    413: OpenApiResponse(ErrorSerializer, description="Request body over the size limit."),
    415: OpenApiResponse(
        ErrorSerializer, description="Body not sent as multipart/form-data (or a URL-encoded form)."
    ),
}
# Anyone reads the catalog, signed in or not; the schema says so, so clients (and fuzzers) need no
# credentials. drf-spectacular annotates ``auth`` as a list of names, but writes it to the schema as it is:
# OpenAPI's list of security requirement objects, which is what it must be.
READ_AUTH: Sequence[str] = [{"tokenAuth": []}, {"cookieAuth": []}, {}]  # type: ignore[list-item]
_Row = TypeVar("_Row", bound=Model)


def _errors(*codes: int) -> dict[int, OpenApiResponse]:
    return {code: ERRORS[code] for code in codes}


def catalog_schema(serializer: Any) -> Any:
    """The responses each ModelViewSet action can give, with the error envelope for each error status."""
    write = _errors(400, 401, 403, 413)
    return extend_schema_view(
        list=extend_schema(auth=READ_AUTH, responses={200: serializer(many=True), **_errors(400, 404)}),
        retrieve=extend_schema(auth=READ_AUTH, responses={200: serializer, **_errors(404)}),
        create=extend_schema(responses={201: serializer, **write}),
        update=extend_schema(responses={200: serializer, **write, **_errors(404)}),
        partial_update=extend_schema(responses={200: serializer, **write, **_errors(404)}),
        destroy=extend_schema(responses={204: None, **_errors(401, 403, 404, 409)}),
    )


class ProtectedDeleteMixin:
    """Deleting an entry that designs, plans, sweeps, defaults or other entries use is a 409 naming them
    (services.catalog_row_delete), not a 204 that breaks them or a 500."""

    def perform_destroy(self, instance: Any) -> None:
        services.catalog_row_delete(row=instance)


class CatalogViewSet(ProtectedDeleteMixin, viewsets.ModelViewSet[_Row]):
    # JSON only, so a value of the wrong type is refused rather than read from form text (the CSV import
    # below takes multipart).
    parser_classes = [JSONParser]
    # A slug's characters (SlugField's); anything else in the URL is a 404 before the database sees it:
    # PostgreSQL refuses a NUL in a query (/accelerators/%00/ answered 500).
    lookup_value_regex = r"[-a-zA-Z0-9_]+"
    # An API token writes the catalog only with the catalog scope (clusterdesigner.api_tokens).
    token_scope = "catalog"

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Any:
        """A list page is the same bytes for every reader (the catalog is public and nothing in it depends on
        who asks), so it is rendered once per catalog version, URL (filters, page, host: links are absolute),
        format and day (a price's ``stale`` flag moves with the date), and kept in this process
        (clusterdesigner.memo). A catalog write changes ``catalog_version()``, read here on every request, so
        an edit is seen at once in every process. The ETag lets a client revalidate with If-None-Match."""
        if request.accepted_renderer.format != "json":
            return super().list(request, *args, **kwargs)
        state = catalog_state()
        key = (type(self).__name__, request.build_absolute_uri(), request.accepted_media_type, *state)
        hit = memo.CATALOG_PAGES.get(key)
        if hit is None:
            # Rendered here to be kept; finalize_response takes the view's Vary header out of self.headers as
            # it applies it, so a copy is restored for the answer sent (the page kept first lacked "Vary:
            # Accept", which every later one had).
            headers = dict(self.headers)
            response = self.finalize_response(
                request, super().list(request, *args, **kwargs), *args, **kwargs
            )
            self.headers = headers
            if response.status_code != 200:
                return response
            response.render()
            content = bytes(response.content)
            hit = (content, response["Content-Type"], f'"{hashlib.sha256(content).hexdigest()[:32]}"')
            memo.CATALOG_PAGES.put(key, hit, len(content))
        content, content_type, etag = hit
        if etag in (tag.strip() for tag in request.headers.get("If-None-Match", "").split(",")):
            cached: HttpResponse = HttpResponseNotModified()
        else:
            cached = memo.keep(HttpResponse(content, content_type=content_type), state)
        cached["ETag"] = etag
        return cached


def catalog_state() -> tuple[Any, ...]:
    """What a catalog list page is a function of besides its URL and media type: the catalog's version and
    the day's freshness (a price's ``stale`` flag)."""
    return selectors.catalog_version(), selectors.price_freshness()


def _list_probe(environ: dict[str, Any], _value: str) -> tuple[Any, ...]:
    """The fast path's probe of a catalog list (clusterdesigner.fastpath): the page is the same for every
    reader, so the state it is kept for is all there is to read (a request with credentials, which DRF
    checks, is Django's to answer)."""
    return catalog_state()


@catalog_schema(serializers.AcceleratorSerializer)
class AcceleratorViewSet(CatalogViewSet[models.Accelerator]):
    queryset = selectors.accelerator_list()
    serializer_class = serializers.AcceleratorSerializer
    filterset_class = filters.AcceleratorFilterSet
    lookup_field = "slug"
    ordering_fields = [
        "name",
        "memory_gib",
        "hbm_bandwidth_tbps",
        "bf16_dense_tflops",
        "fp8_dense_tflops",
        "tdp_w",
    ]
    search_fields = ["name", "slug"]


@catalog_schema(serializers.ServerTypeSerializer)
class ServerTypeViewSet(CatalogViewSet[models.ServerType]):
    queryset = models.ServerType.objects.select_related("vendor", "accelerator")
    serializer_class = serializers.ServerTypeSerializer
    filterset_class = filters.ServerTypeFilterSet
    lookup_field = "slug"
    ordering_fields = ["name", "gpus_per_node", "node_power_kw", "price_usd"]
    search_fields = ["name", "slug"]


@catalog_schema(serializers.FabricSerializer)
class FabricViewSet(CatalogViewSet[models.Fabric]):
    queryset = models.Fabric.objects.all()
    serializer_class = serializers.FabricSerializer
    filterset_class = filters.FabricFilterSet
    lookup_field = "slug"
    ordering_fields = ["name", "port_gbps", "latency_us"]
    search_fields = ["name", "slug"]


@catalog_schema(serializers.SwitchSerializer)
class SwitchViewSet(CatalogViewSet[models.Switch]):
    queryset = models.Switch.objects.select_related("vendor")
    serializer_class = serializers.SwitchSerializer
    filterset_class = filters.SwitchFilterSet
    lookup_field = "slug"
    ordering_fields = ["name", "ports", "port_gbps", "price_usd"]
    search_fields = ["name", "slug"]


@catalog_schema(serializers.StorageTierSerializer)
class StorageTierViewSet(CatalogViewSet[models.StorageTier]):
    queryset = models.StorageTier.objects.all()
    serializer_class = serializers.StorageTierSerializer
    filterset_class = filters.StorageTierFilterSet
    lookup_field = "slug"
    ordering_fields = ["name", "read_gbps", "write_gbps", "usd_per_tb_month"]
    search_fields = ["name", "slug"]


@catalog_schema(serializers.CloudOfferingSerializer)
class CloudOfferingViewSet(CatalogViewSet[models.CloudOffering]):
    queryset = selectors.cloud_offering_list()
    serializer_class = serializers.CloudOfferingSerializer
    filterset_class = filters.CloudOfferingFilterSet
    lookup_field = "slug"
    ordering_fields = ["provider", "instance_type", "gpu_count"]
    search_fields = ["instance_type", "slug"]


@catalog_schema(serializers.CloudPriceSerializer)
class CloudPriceViewSet(CatalogViewSet[models.CloudPrice]):
    lookup_value_regex = r"[0-9]+"  # by id
    queryset = selectors.cloud_price_list()
    serializer_class = serializers.CloudPriceSerializer
    filterset_class = filters.CloudPriceFilterSet
    ordering_fields = ["usd_per_hour", "as_of", "pricing_model"]

    @extend_schema(
        auth=READ_AUTH,
        responses={(200, "text/csv"): OpenApiTypes.STR, 400: ERRORS[400]},
        description="The filtered prices as CSV, in the columns the importer reads.",
    )
    @action(detail=False, methods=["get"], url_path="export")
    def export(self, request: Request) -> HttpResponse:
        prices = self.filter_queryset(self.get_queryset())
        response = HttpResponse(services.cloud_price_export_csv(prices=prices), content_type="text/csv")
        response["Content-Disposition"] = 'attachment; filename="cloud-prices.csv"'
        return response

    @extend_schema(
        request={"multipart/form-data": serializers.PriceImportSerializer},
        responses={201: serializers.PriceImportResultSerializer, **_errors(400, 401, 403, 413, 415)},
        description=(
            "Import negotiated prices from CSV. Every row is validated; if any row is bad, nothing is "
            "imported and each bad row is reported by line number and reason."
        ),
    )
    @action(detail=False, methods=["post"], url_path="import", parser_classes=[MultiPartParser, FormParser])
    def import_csv(self, request: Request) -> Response:
        form = serializers.PriceImportSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        # A services.PriceImportError is the handler's 400, each bad row under "line N.<column>".
        saved = services.cloud_price_import_csv(content=form.validated_data["file"])
        return Response({"imported": len(saved)}, status=status.HTTP_201_CREATED)

    @extend_schema(
        request={"multipart/form-data": serializers.SkyPilotImportSerializer},
        responses={
            201: serializers.SkyPilotImportResultSerializer,
            200: OpenApiResponse(
                serializers.SkyPilotImportResultSerializer,
                description="Nothing to import: every row was skipped (the result says why).",
            ),
            **_errors(400, 401, 403, 413, 415),
        },
        description="Import one SkyPilot price table (vms.csv) for one cloud: on-demand and spot prices per "
        "region (the cheapest region per instance type, or all with all_regions), dated as_of. Instance "
        "types the catalog lacks become offerings flagged needs_review. If any row is bad, nothing is "
        "imported and each bad row is reported by line; rows without a mapped accelerator or a price are "
        "skipped and listed.",
    )
    @action(
        detail=False,
        methods=["post"],
        url_path="import-skypilot",
        parser_classes=[MultiPartParser, FormParser],
    )
    def import_skypilot(self, request: Request) -> Response:
        form = serializers.SkyPilotImportSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        result = services.cloud_price_import_skypilot(
            cloud=data["cloud"],
            content=data["file"],
            as_of=data.get("as_of") or timezone.localdate(),
            all_regions=data["all_regions"],
        )
        body = serializers.SkyPilotImportResultSerializer(
            {
                "cloud": result.cloud,
                "as_of": result.as_of,
                "imported": len(result.saved),
                "created_offerings": [o.slug for o in result.created_offerings],
                "mapped": result.mapped(),
                "skipped": result.skipped_summary(),
            }
        ).data
        return Response(body, status=status.HTTP_201_CREATED if result.saved else status.HTTP_200_OK)


def _read_only_schema(serializer: Any) -> Any:
    return extend_schema_view(
        list=extend_schema(auth=READ_AUTH, responses={200: serializer(many=True), **_errors(400, 404)}),
        retrieve=extend_schema(auth=READ_AUTH, responses={200: serializer, **_errors(404)}),
    )


@_read_only_schema(serializers.ResidualValuePointSerializer)
class ResidualValuePointViewSet(viewsets.ReadOnlyModelViewSet[models.ResidualValuePoint]):
    """Sourced resale values by age (fraction of the price new); read-only, loaded with the seed catalog."""

    lookup_value_regex = r"[0-9]+"
    queryset = selectors.residual_value_list()
    serializer_class = serializers.ResidualValuePointSerializer
    filterset_class = filters.ResidualValuePointFilterSet
    ordering_fields = ["age_years", "fraction_of_new", "as_of"]


@_read_only_schema(serializers.RentalPricePointSerializer)
class RentalPricePointViewSet(viewsets.ReadOnlyModelViewSet[models.RentalPricePoint]):
    """Sourced market prices of one GPU-hour over time; read-only, loaded with the seed catalog."""

    lookup_value_regex = r"[0-9]+"
    queryset = selectors.rental_price_history()
    serializer_class = serializers.RentalPricePointSerializer
    filterset_class = filters.RentalPricePointFilterSet
    ordering_fields = ["as_of", "usd_per_gpu_hour"]


# Each CatalogViewSet's list answered before Django's stack when a kept page fits (clusterdesigner.fastpath),
# by the basenames clusterdesigner/urls.py registers them under.
for _basename in (
    "accelerator",
    "server-type",
    "fabric",
    "switch",
    "storage-tier",
    "cloud-offering",
    "cloud-price",
):
    fastpath.route(f"{_basename}-list", method="GET", probe=_list_probe)
