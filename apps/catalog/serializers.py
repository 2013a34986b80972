from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Model
from rest_framework import serializers

from apps.catalog.models import (
    Accelerator,
    CloudOffering,
    CloudPrice,
    Fabric,
    RentalPricePoint,
    ResidualValuePoint,
    ServerType,
    StorageTier,
    Switch,
    Vendor,
)
from apps.catalog.selectors import price_freshness
from apps.catalog.skypilot import SKYPILOT_CLOUDS
from clusterdesigner.api import KnownKeysOnly, StrictJSONTypes


class CleanedModelSerializer(KnownKeysOnly, StrictJSONTypes, serializers.ModelSerializer[Any]):
    """Runs the model's clean() so the API and the admin enforce the same one-row rules, and refuses JSON values
    of the wrong type (0 for a name) instead of coercing them."""  # noqa: E501 (drf-spectacular publishes this text)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        model: type[Model] = self.Meta.model
        instance = self.instance or model()
        for key, value in attrs.items():
            setattr(instance, key, value)
        try:
            instance.clean()
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from exc
        return attrs


class AcceleratorSerializer(CleanedModelSerializer):
    vendor = serializers.SlugRelatedField(slug_field="slug", queryset=Vendor.objects.all())
    precisions = serializers.ListField(child=serializers.CharField(), read_only=True)

    class Meta:
        model = Accelerator
        fields = [
            "slug",
            "name",
            "vendor",
            "family",
            "form_factor",
            "memory_gib",
            "memory_type",
            "hbm_bandwidth_tbps",
            "tf32_dense_tflops",
            "bf16_dense_tflops",
            "fp8_dense_tflops",
            "fp4_dense_tflops",
            "precisions",
            "measured_bf16_matmul_tflops",
            "measured_fp8_matmul_tflops",
            "scaleup_link",
            "scaleup_bandwidth_gbps",
            "scaleup_domain_gpus",
            "host_link_gbps",
            "has_nvlink",
            "tdp_w",
            "list_price_usd",
            "availability",
            "source",
            "as_of",
            "notes",
            "retired",
        ]


class ServerTypeSerializer(CleanedModelSerializer):
    vendor = serializers.SlugRelatedField(slug_field="slug", queryset=Vendor.objects.all())
    accelerator = serializers.SlugRelatedField(slug_field="slug", queryset=Accelerator.objects.all())

    class Meta:
        model = ServerType
        fields = [
            "slug",
            "name",
            "vendor",
            "accelerator",
            "gpus_per_node",
            "nics_per_node",
            "nic_gbps",
            "node_power_kw",
            "price_usd",
            "price_low_usd",
            "price_high_usd",
            "source",
            "as_of",
            "notes",
            "retired",
        ]


class FabricSerializer(CleanedModelSerializer):
    class Meta:
        model = Fabric
        fields = [
            "slug",
            "name",
            "kind",
            "port_gbps",
            "latency_us",
            "collective_efficiency",
            "efficiency_source",
            "source",
            "as_of",
            "notes",
            "retired",
        ]


class SwitchSerializer(CleanedModelSerializer):
    vendor = serializers.SlugRelatedField(slug_field="slug", queryset=Vendor.objects.all())

    class Meta:
        model = Switch
        fields = [
            "slug",
            "name",
            "vendor",
            "fabric_kind",
            "ports",
            "port_gbps",
            "price_usd",
            "power_w",
            "source",
            "as_of",
            "notes",
        ]


class StorageTierSerializer(CleanedModelSerializer):
    class Meta:
        model = StorageTier
        fields = [
            "slug",
            "name",
            "kind",
            "read_gbps",
            "write_gbps",
            "scope",
            "usd_per_tb_month",
            "source",
            "as_of",
            "notes",
            "retired",
        ]


class StaleMixin(serializers.Serializer[Any]):
    stale = serializers.SerializerMethodField(
        help_text="True when as_of is more than PRICE_STALE_AFTER_DAYS days before today (computed)."
    )

    def get_stale(self, obj: CloudPrice) -> bool:
        # Read per row, not at import: the cut-off moves with the date.
        return price_freshness().is_stale(obj.as_of.isoformat() if obj.as_of else None)


class CloudPriceSerializer(StaleMixin, CleanedModelSerializer):
    offering = serializers.SlugRelatedField(slug_field="slug", queryset=CloudOffering.objects.all())
    usd_per_gpu_hour = serializers.FloatField(read_only=True)

    class Meta:
        model = CloudPrice
        fields = [
            "id",
            "offering",
            "pricing_model",
            "usd_per_hour",
            "usd_per_gpu_hour",
            "currency",
            "region",
            "source",
            "as_of",
            "stale",
            "notes",
        ]


class CloudOfferingPriceSerializer(StaleMixin, serializers.ModelSerializer[Any]):
    usd_per_gpu_hour = serializers.FloatField(read_only=True)

    class Meta:
        model = CloudPrice
        fields = [
            "id",
            "pricing_model",
            "usd_per_hour",
            "usd_per_gpu_hour",
            "currency",
            "region",
            "source",
            "as_of",
            "stale",
        ]


class CloudOfferingSerializer(CleanedModelSerializer):
    accelerator = serializers.SlugRelatedField(slug_field="slug", queryset=Accelerator.objects.all())
    prices = CloudOfferingPriceSerializer(many=True, read_only=True)

    class Meta:
        model = CloudOffering
        fields = [
            "slug",
            "provider",
            "instance_type",
            "region",
            "accelerator",
            "gpu_count",
            "network_gbps",
            "spot_preemptions_per_day",
            "needs_review",
            "source",
            "as_of",
            "notes",
            "prices",
            "retired",
        ]


class PriceImportSerializer(serializers.Serializer[Any]):
    file = serializers.FileField(
        help_text="CSV with columns "
        + ", ".join(["offering", "pricing_model", "usd_per_hour", "currency", "region", "as_of", "source"])
        + ", UTF-8, at most DATA_UPLOAD_MAX_MEMORY_SIZE bytes (2 MiB by default)."
    )

    def validate_file(self, value: Any) -> str:
        """The file's text: over the size limit, not UTF-8, or not text at all (NUL bytes) is a 400 here,
        before the CSV reader sees it."""
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is not None and value.size > limit:
            raise serializers.ValidationError(f"file is {value.size} bytes; the limit is {limit} bytes")
        try:
            text: str = value.read().decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise serializers.ValidationError(
                f"not UTF-8 text (byte {exc.start}); save the CSV as UTF-8"
            ) from exc
        if "\x00" in text:
            raise serializers.ValidationError("contains NUL bytes: not a CSV text file")
        return text


class PriceImportResultSerializer(serializers.Serializer[Any]):
    imported = serializers.IntegerField()


class SkyPilotImportSerializer(PriceImportSerializer):
    file = serializers.FileField(
        help_text="One SkyPilot vms.csv (columns read by name: InstanceType, "
        "AcceleratorName, AcceleratorCount, Price, SpotPrice, Region, ...), UTF-8, "
        "at most DATA_UPLOAD_MAX_MEMORY_SIZE bytes."
    )
    cloud = serializers.ChoiceField(choices=list(SKYPILOT_CLOUDS), help_text="The cloud the file is for.")
    as_of = serializers.DateField(required=False, help_text="Date to store the prices under (default today).")
    all_regions = serializers.BooleanField(
        default=False, help_text="Store every region's price, not only the cheapest region's."
    )


class SkyPilotMappedSerializer(serializers.Serializer[Any]):
    offering = serializers.CharField()
    instance_type = serializers.CharField()
    accelerator = serializers.CharField()
    gpu_count = serializers.IntegerField()
    pricing_model = serializers.CharField()
    region = serializers.CharField(allow_blank=True)
    usd_per_hour = serializers.FloatField()
    created_offering = serializers.BooleanField()


class SkyPilotSkippedSerializer(serializers.Serializer[Any]):
    reason = serializers.CharField()
    count = serializers.IntegerField()
    lines = serializers.ListField(child=serializers.IntegerField(), help_text="The first lines skipped so.")
    instance_types = serializers.ListField(child=serializers.CharField())


class SkyPilotImportResultSerializer(serializers.Serializer[Any]):
    cloud = serializers.CharField()
    as_of = serializers.DateField()
    imported = serializers.IntegerField(help_text="Prices stored (created or replaced).")
    created_offerings = serializers.ListField(
        child=serializers.CharField(), help_text="Slugs of offerings created, flagged needs_review."
    )
    mapped = SkyPilotMappedSerializer(many=True)
    skipped = SkyPilotSkippedSerializer(many=True, help_text="Rows (or prices) left out, grouped by reason.")


class ResidualValuePointSerializer(serializers.ModelSerializer[Any]):
    # Null for a point about a generation the catalog has no accelerator for (the schema says so).
    accelerator: serializers.SlugRelatedField[Accelerator] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True, allow_null=True
    )

    class Meta:
        model = ResidualValuePoint
        fields = [
            "id",
            "series",
            "generation",
            "accelerator",
            "age_years",
            "fraction_of_new",
            "source",
            "as_of",
            "verification",
            "notes",
        ]


class RentalPricePointSerializer(serializers.ModelSerializer[Any]):
    # Null for a point about a generation the catalog has no accelerator for (the schema says so).
    accelerator: serializers.SlugRelatedField[Accelerator] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True, allow_null=True
    )

    class Meta:
        model = RentalPricePoint
        fields = [
            "id",
            "series",
            "generation",
            "accelerator",
            "basis",
            "usd_per_gpu_hour",
            "source",
            "as_of",
            "verification",
            "notes",
        ]
