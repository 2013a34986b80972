"""Catalog REST API: anyone reads, staff write."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from apps.catalog import filters, selectors, serializers, services
from apps.catalog.models import Fabric, ServerType, StorageTier, Switch
from clusterdesigner.api import ErrorSerializer, error_body


class AcceleratorViewSet(viewsets.ModelViewSet):
    queryset = selectors.accelerator_list()
    serializer_class = serializers.AcceleratorSerializer
    filterset_class = filters.AcceleratorFilterSet
    lookup_field = "slug"
    ordering_fields = ["name", "memory_gib", "hbm_bandwidth_tbps", "bf16_dense_tflops", "fp8_dense_tflops", "tdp_w"]
    search_fields = ["name", "slug"]


class ServerTypeViewSet(viewsets.ModelViewSet):
    queryset = ServerType.objects.select_related("vendor", "accelerator")
    serializer_class = serializers.ServerTypeSerializer
    filterset_class = filters.ServerTypeFilterSet
    lookup_field = "slug"
    ordering_fields = ["name", "gpus_per_node", "node_power_kw", "price_usd"]
    search_fields = ["name", "slug"]


class FabricViewSet(viewsets.ModelViewSet):
    queryset = Fabric.objects.all()
    serializer_class = serializers.FabricSerializer
    filterset_class = filters.FabricFilterSet
    lookup_field = "slug"
    ordering_fields = ["name", "port_gbps", "latency_us"]
    search_fields = ["name", "slug"]


class SwitchViewSet(viewsets.ModelViewSet):
    queryset = Switch.objects.select_related("vendor")
    serializer_class = serializers.SwitchSerializer
    filterset_class = filters.SwitchFilterSet
    lookup_field = "slug"
    ordering_fields = ["name", "ports", "port_gbps", "price_usd"]
    search_fields = ["name", "slug"]


class StorageTierViewSet(viewsets.ModelViewSet):
    queryset = StorageTier.objects.all()
    serializer_class = serializers.StorageTierSerializer
    filterset_class = filters.StorageTierFilterSet
    lookup_field = "slug"
    ordering_fields = ["name", "read_gbps", "write_gbps", "usd_per_tb_month"]
    search_fields = ["name", "slug"]


class CloudOfferingViewSet(viewsets.ModelViewSet):
    queryset = selectors.cloud_offering_list()
    serializer_class = serializers.CloudOfferingSerializer
    filterset_class = filters.CloudOfferingFilterSet
    lookup_field = "slug"
    ordering_fields = ["provider", "instance_type", "gpu_count"]
    search_fields = ["instance_type", "slug"]


class CloudPriceViewSet(viewsets.ModelViewSet):
    queryset = selectors.cloud_price_list()
    serializer_class = serializers.CloudPriceSerializer
    filterset_class = filters.CloudPriceFilterSet
    ordering_fields = ["usd_per_hour", "as_of", "pricing_model"]

    @extend_schema(
        responses={(200, "text/csv"): OpenApiTypes.STR},
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
        responses={201: serializers.PriceImportResultSerializer, 400: OpenApiResponse(ErrorSerializer)},
        description="Import negotiated prices from CSV. Every row is validated; if any row is bad, nothing is "
        "imported and each bad row is reported by line number and reason.",
    )
    @action(detail=False, methods=["post"], url_path="import", parser_classes=[MultiPartParser, FormParser])
    def import_csv(self, request: Request) -> Response:
        form = serializers.PriceImportSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            saved = services.cloud_price_import_csv(content=form.validated_data["file"].read())
        except services.PriceImportError as exc:
            return Response(error_body("invalid", str(exc), exc.as_fields()), status=status.HTTP_400_BAD_REQUEST)
        return Response({"imported": len(saved)}, status=status.HTTP_201_CREATED)
