"""The hardware and price catalog. Every figure carries its source and as-of date."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from clusterdesigner.engine.core.offerings import PROVIDER_LABELS

POSITIVE = [MinValueValidator(0.000001, "must be greater than zero")]
NON_NEGATIVE = [MinValueValidator(0, "must not be negative")]


class Sourced(models.Model):
    """Where a row's figures come from: a citation or URL and the date they were true."""

    source = models.TextField(help_text="Citation or URL for the figures in this row.")
    as_of = models.DateField(help_text="Date the figures were last known to be valid.")
    notes = models.TextField(blank=True)
    # When the row last changed: with row counts it versions the catalog, so engine inputs can be cached.
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class Retirable(models.Model):
    """A row designs, plans and sweeps name by slug: it cannot be deleted while anything uses it
    (clusterdesigner.references); retiring hides it from pickers and keeps it for what uses it."""

    retired = models.BooleanField(
        default=False, help_text="Hidden from pickers; kept for the designs, plans and sweeps that use it."
    )

    class Meta:
        abstract = True


class Vendor(models.Model):
    """A maker of accelerators, servers or switches (NVIDIA, AMD, ...)."""

    slug = models.SlugField(max_length=50, unique=True)
    name = models.CharField(max_length=100)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Accelerator(Sourced, Retirable):
    """One GPU model with its dense peak throughput per precision (never the sparse headline)."""

    class Family(models.TextChoices):
        AMPERE = "ampere", "NVIDIA Ampere"
        ADA = "ada", "NVIDIA Ada Lovelace"
        HOPPER = "hopper", "NVIDIA Hopper"
        BLACKWELL = "blackwell", "NVIDIA Blackwell"
        RUBIN = "rubin", "NVIDIA Rubin"
        CDNA3 = "cdna3", "AMD CDNA 3"
        CDNA4 = "cdna4", "AMD CDNA 4"
        OTHER = "other", PROVIDER_LABELS["other"]

    class Availability(models.TextChoices):
        # An announced part's figures are the vendor's launch claims: nothing has been measured on it.
        SHIPPING = "shipping", "Shipping"
        ANNOUNCED = "announced", "Announced, not measured"

    slug = models.SlugField(max_length=50, unique=True)
    name = models.CharField(max_length=100)
    vendor = models.ForeignKey(Vendor, on_delete=models.PROTECT, related_name="accelerators")
    family = models.CharField(max_length=20, choices=Family.choices, default=Family.OTHER)
    form_factor = models.CharField(max_length=100, blank=True)
    memory_gib = models.FloatField(validators=POSITIVE, help_text="Device memory, GiB.")
    memory_type = models.CharField(max_length=40, blank=True)
    hbm_bandwidth_tbps = models.FloatField(validators=POSITIVE, help_text="Memory bandwidth, TB/s.")
    tf32_dense_tflops = models.FloatField(null=True, blank=True, validators=POSITIVE)
    bf16_dense_tflops = models.FloatField(null=True, blank=True, validators=POSITIVE)
    fp8_dense_tflops = models.FloatField(null=True, blank=True, validators=POSITIVE)
    fp4_dense_tflops = models.FloatField(null=True, blank=True, validators=POSITIVE)
    measured_bf16_matmul_tflops = models.FloatField(
        null=True,
        blank=True,
        validators=POSITIVE,
        help_text="Measured maximum achievable BF16 matmul TFLOP/s.",
    )
    measured_fp8_matmul_tflops = models.FloatField(null=True, blank=True, validators=POSITIVE)
    scaleup_link = models.CharField(max_length=100, blank=True, help_text="NVLink, XGMI, or none.")
    scaleup_bandwidth_gbps = models.FloatField(
        default=0, validators=NON_NEGATIVE, help_text="Scale-up GB/s per GPU, one direction; 0 when none."
    )
    scaleup_domain_gpus = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    host_link_gbps = models.FloatField(
        null=True,
        blank=True,
        validators=POSITIVE,
        help_text="GB/s one way between one GPU and host memory (PCIe, NVLink-C2C).",
    )
    has_nvlink = models.BooleanField(default=False)
    tdp_w = models.FloatField(null=True, blank=True, validators=POSITIVE)
    list_price_usd = models.FloatField(null=True, blank=True, validators=NON_NEGATIVE)
    availability = models.CharField(
        max_length=20,
        choices=Availability.choices,
        default=Availability.SHIPPING,
        help_text="Announced: the vendor's launch figures, dated as_of the announcement.",
    )

    class Meta:
        ordering = ["vendor__name", "name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if not any(
            [self.tf32_dense_tflops, self.bf16_dense_tflops, self.fp8_dense_tflops, self.fp4_dense_tflops]
        ):
            raise ValidationError({"bf16_dense_tflops": "give the dense peak for at least one precision"})
        if self.scaleup_bandwidth_gbps and self.scaleup_domain_gpus < 2:
            raise ValidationError({"scaleup_domain_gpus": "a scale-up link needs a domain of 2 GPUs or more"})

    @property
    def precisions(self) -> list[str]:
        return [p for p in ("tf32", "bf16", "fp8", "fp4") if getattr(self, f"{p}_dense_tflops")]

    def engine_record(self) -> dict[str, Any]:
        fields = [
            f.name
            for f in self._meta.concrete_fields
            if f.name not in {"id", "vendor", "notes", "updated_at"}
        ]  # the source rides along so a design's assumptions cite the part's figures
        record = {name: getattr(self, name) for name in fields}
        record["vendor"] = self.vendor.slug
        record["as_of"] = self.as_of.isoformat() if self.as_of else None
        return record


class ServerType(Sourced, Retirable):
    """A server (node) model: which accelerator, how many, its NICs and power."""

    slug = models.SlugField(max_length=60, unique=True)
    name = models.CharField(max_length=120)
    vendor = models.ForeignKey(Vendor, on_delete=models.PROTECT, related_name="server_types")
    accelerator = models.ForeignKey(Accelerator, on_delete=models.PROTECT, related_name="server_types")
    gpus_per_node = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    nics_per_node = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    nic_gbps = models.FloatField(validators=POSITIVE, help_text="Gb/s per NIC.")
    node_power_kw = models.FloatField(validators=POSITIVE)
    price_usd = models.FloatField(null=True, blank=True, validators=NON_NEGATIVE)
    price_low_usd = models.FloatField(
        null=True, blank=True, validators=NON_NEGATIVE, help_text="Low end of the reported price range, USD."
    )
    price_high_usd = models.FloatField(
        null=True, blank=True, validators=NON_NEGATIVE, help_text="High end of the reported price range, USD."
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        low, high = self.price_low_usd, self.price_high_usd
        if low is not None and high is not None and low > high:
            raise ValidationError({"price_low_usd": "the low end of the range must not exceed the high end"})


class Fabric(Sourced, Retirable):
    """A scale-out network fabric with its per-port rate, latency and measured collective efficiency."""

    class Kind(models.TextChoices):
        INFINIBAND = "infiniband", "InfiniBand"
        ROCE = "roce", "RoCE"
        ETHERNET = "ethernet", "Ethernet"
        EFA = "efa", "AWS EFA"

    slug = models.SlugField(max_length=50, unique=True)
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    port_gbps = models.FloatField(validators=POSITIVE, help_text="Gb/s per port.")
    latency_us = models.FloatField(validators=NON_NEGATIVE, help_text="Port-to-port latency, µs.")
    collective_efficiency = models.FloatField(
        validators=[MinValueValidator(0.01)], help_text="Fraction of line rate that large all-reduces reach."
    )
    efficiency_source = models.TextField(blank=True)

    class Meta:
        ordering = ["kind", "-port_gbps"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.collective_efficiency is not None and self.collective_efficiency > 1:
            raise ValidationError({"collective_efficiency": "must be at most 1 (a fraction of line rate)"})


class Switch(Sourced):
    """A network switch model: radix, port speed, price and power."""

    slug = models.SlugField(max_length=60, unique=True)
    name = models.CharField(max_length=120)
    vendor = models.ForeignKey(Vendor, on_delete=models.PROTECT, related_name="switches")
    fabric_kind = models.CharField(max_length=20, choices=Fabric.Kind.choices)
    ports = models.PositiveIntegerField(validators=[MinValueValidator(2)])
    port_gbps = models.FloatField(validators=POSITIVE)
    price_usd = models.FloatField(null=True, blank=True, validators=NON_NEGATIVE)
    power_w = models.FloatField(null=True, blank=True, validators=NON_NEGATIVE)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "switches"

    def __str__(self) -> str:
        return self.name


class StorageTier(Sourced, Retirable):
    """A storage tier with its read/write bandwidth and monthly price per TB."""

    class Kind(models.TextChoices):
        LOCAL_NVME = "local_nvme", "Local NVMe"
        PARALLEL_FS = "parallel_fs", "Parallel file system"
        NFS = "nfs", "NFS"
        OBJECT_STORE = "object_store", "Object store"

    class Scope(models.TextChoices):
        PER_NODE = "per_node", "Per node"
        AGGREGATE = "aggregate", "Aggregate"

    slug = models.SlugField(max_length=50, unique=True)
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    read_gbps = models.FloatField(validators=POSITIVE, help_text="Read GB/s.")
    write_gbps = models.FloatField(validators=POSITIVE, help_text="Write GB/s.")
    scope = models.CharField(max_length=20, choices=Scope.choices)
    usd_per_tb_month = models.FloatField(validators=NON_NEGATIVE)

    class Meta:
        ordering = ["kind", "name"]

    def __str__(self) -> str:
        return self.name


class CloudOffering(Sourced, Retirable):
    """A cloud instance type in a region: which accelerator and how many per instance."""

    class Provider(models.TextChoices):
        AWS = "aws", PROVIDER_LABELS["aws"]
        GCP = "gcp", PROVIDER_LABELS["gcp"]
        AZURE = "azure", PROVIDER_LABELS["azure"]
        OCI = "oci", PROVIDER_LABELS["oci"]
        COREWEAVE = "coreweave", PROVIDER_LABELS["coreweave"]
        LAMBDA = "lambda", PROVIDER_LABELS["lambda"]
        OTHER = "other", PROVIDER_LABELS["other"]

    slug = models.SlugField(max_length=80, unique=True)
    provider = models.CharField(max_length=20, choices=Provider.choices)
    instance_type = models.CharField(max_length=100)
    region = models.CharField(max_length=100, blank=True)
    accelerator = models.ForeignKey(Accelerator, on_delete=models.PROTECT, related_name="cloud_offerings")
    gpu_count = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    network_gbps = models.FloatField(null=True, blank=True, validators=POSITIVE)
    spot_preemptions_per_day = models.FloatField(null=True, blank=True, validators=NON_NEGATIVE)
    # Set on offerings an import created from a price list (SkyPilot): their accelerator and GPU count come
    # from the list's accelerator names and are worth a look before anyone relies on them.
    needs_review = models.BooleanField(
        default=False, help_text="Created by an import; check the accelerator, GPU count and network."
    )

    class Meta:
        ordering = ["provider", "instance_type"]
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "instance_type", "region"], name="catalog_offering_unique_per_region"
            )
        ]

    def __str__(self) -> str:
        return f"{self.get_provider_display()} {self.instance_type}"

    def engine_record(self, prices: list[CloudPrice] | None = None) -> dict[str, Any]:
        rows = prices if prices is not None else list(self.prices.all())
        return {
            "slug": self.slug,
            "provider": self.provider,
            "instance_type": self.instance_type,
            "region": self.region,
            "accelerator": self.accelerator.slug,
            "gpu_count": self.gpu_count,
            "network_gbps": self.network_gbps,
            "spot_preemptions_per_day": self.spot_preemptions_per_day,
            # The engines add prices as US dollars: a row in another currency (refused now; one stored
            # before would be read as dollars) is left out, so the offering reads as unpriced under it.
            "prices": [price.engine_record() for price in rows if price.currency == PRICE_CURRENCY],
        }


# Prices are in US dollars (the field is usd_per_hour; the cost engine adds them as dollars): a quote in
# another currency is converted before it is entered, with the rate and its date in the source.
PRICE_CURRENCY = "USD"
CURRENCY_MESSAGE = (
    "only USD prices are used ({currency} given): convert the price to US dollars and cite the rate in "
    "the source"
)


class CloudPrice(Sourced):
    """One published or negotiated price of a cloud offering under one pricing model."""

    class PricingModel(models.TextChoices):
        ON_DEMAND = "on_demand", "On-demand"
        RESERVED_1Y = "reserved_1y", "Reserved 1 year"
        RESERVED_3Y = "reserved_3y", "Reserved 3 years"
        # A savings plan's rate per instance-hour; the plan commits that spend for every hour of its term.
        SAVINGS_1Y = "savings_1y", "Savings plan 1 year"
        SAVINGS_3Y = "savings_3y", "Savings plan 3 years"
        SPOT = "spot", "Spot"

    offering = models.ForeignKey(CloudOffering, on_delete=models.CASCADE, related_name="prices")
    pricing_model = models.CharField(max_length=20, choices=PricingModel.choices)
    usd_per_hour = models.FloatField(validators=NON_NEGATIVE, help_text="Price per instance-hour.")
    currency = models.CharField(max_length=3, default=PRICE_CURRENCY)
    region = models.CharField(max_length=100, blank=True)

    class Meta:
        ordering = ["offering__slug", "pricing_model", "-as_of"]
        constraints = [
            models.UniqueConstraint(
                fields=["offering", "pricing_model", "region", "as_of"], name="catalog_price_unique_per_date"
            ),
            models.CheckConstraint(
                condition=models.Q(usd_per_hour__gte=0), name="catalog_price_not_negative"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.offering} {self.get_pricing_model_display()} {self.usd_per_hour} {self.currency}/h"

    def clean(self) -> None:
        if self.currency != PRICE_CURRENCY:
            raise ValidationError({"currency": CURRENCY_MESSAGE.format(currency=self.currency)})

    @property
    def usd_per_gpu_hour(self) -> float:
        return self.usd_per_hour / self.offering.gpu_count

    def engine_record(self) -> dict[str, Any]:
        return {
            "pricing_model": self.pricing_model,
            "usd_per_hour": self.usd_per_hour,
            "currency": self.currency,
            "region": self.region,
            "as_of": self.as_of.isoformat(),
        }


class ResidualValuePoint(Sourced):
    """One sourced observation of what a used accelerator fetches, as a fraction of its price new, at an age.
    Several sources at one age are kept side by side: their spread is the scatter the cost engine's residual
    value should be read against."""

    series = models.CharField(max_length=100, help_text="The dataset or article the point is from.")
    generation = models.CharField(
        max_length=50, help_text="The accelerator the point is about, e.g. H100 SXM."
    )
    accelerator = models.ForeignKey(
        Accelerator, null=True, blank=True, on_delete=models.SET_NULL, related_name="residual_values"
    )
    age_years = models.FloatField(validators=[MinValueValidator(0), MaxValueValidator(15)])
    fraction_of_new = models.FloatField(
        validators=[MinValueValidator(0), MaxValueValidator(2)],
        help_text="Resale price / price new (1.0 = as new).",
    )
    verification = models.TextField(help_text="How directly the figure was checked, and its standing.")

    class Meta:
        ordering = ["generation", "series", "age_years"]
        constraints = [
            models.UniqueConstraint(
                fields=["series", "generation", "age_years"], name="catalog_residual_unique_per_age"
            ),
            models.CheckConstraint(
                condition=models.Q(fraction_of_new__gte=0, age_years__gte=0),
                name="catalog_residual_not_negative",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.generation} at {self.age_years:g} y: {self.fraction_of_new:.0%} of new ({self.series})"


class RentalPricePoint(Sourced):
    """One sourced observation of the market price of renting one GPU for an hour; ``as_of`` is the date
    observed. The series over time is the price path the cost engine's rental prices should follow."""

    class Basis(models.TextChoices):
        ON_DEMAND = "on_demand", "On-demand"
        CONTRACT_1Y = "contract_1y", "1-year contract"
        SPOT = "spot", "Spot / marketplace"
        MARKET = "market", "Market level (basis not stated)"

    series = models.CharField(max_length=100, help_text="The dataset or article the point is from.")
    generation = models.CharField(max_length=50, help_text="The accelerator rented, e.g. H100 SXM.")
    accelerator = models.ForeignKey(
        Accelerator, null=True, blank=True, on_delete=models.SET_NULL, related_name="rental_prices"
    )
    basis = models.CharField(max_length=20, choices=Basis.choices)
    usd_per_gpu_hour = models.FloatField(validators=POSITIVE)
    verification = models.TextField(help_text="How directly the figure was checked, and its standing.")

    class Meta:
        ordering = ["generation", "as_of", "series"]
        constraints = [
            models.UniqueConstraint(
                fields=["series", "generation", "basis", "as_of"], name="catalog_rental_unique_per_date"
            ),
            models.CheckConstraint(
                condition=models.Q(usd_per_gpu_hour__gt=0), name="catalog_rental_positive"
            ),
        ]

    def __str__(self) -> str:
        return (
            f"{self.generation} {self.get_basis_display()} ${self.usd_per_gpu_hour:.2f}/GPU-h on {self.as_of}"
        )


# --- Upper bounds -------------------------------------------------------------------------------------------
# The largest value of every number a catalog row holds, in one table. Each is far above any real part (the
# largest today in the comment) yet low enough that the engines' sums and products stay finite: a cloud
# price of 1.7e308 was saved and then every evaluation answered "overflowed". Where the cost engine bounds
# the same quantity (clusterdesigner.engine.core.bounds.COST), the catalog uses its bound, so a catalog row is
# always an input the engine accepts. The admin, the API (and its schema's "maximum"), the CSV and SkyPilot
# imports all enforce these, through the fields' validators added below.
CATALOG_MAX: dict[str, float] = {
    "accelerator.memory_gib": 10_000,  # MI355X: 288 GB
    "accelerator.hbm_bandwidth_tbps": 1_000,  # B300: 8 TB/s
    "accelerator.tf32_dense_tflops": 1e6,
    "accelerator.bf16_dense_tflops": 1e6,  # B300: 2,500
    "accelerator.fp8_dense_tflops": 1e6,
    "accelerator.fp4_dense_tflops": 1e6,
    "accelerator.measured_bf16_matmul_tflops": 1e6,
    "accelerator.measured_fp8_matmul_tflops": 1e6,
    "accelerator.scaleup_bandwidth_gbps": 1e6,  # NVLink 5: 900 GB/s one way
    "accelerator.scaleup_domain_gpus": 100_000,  # NVL576
    "accelerator.host_link_gbps": 1e5,  # NVLink-C2C: 450 GB/s
    "accelerator.tdp_w": 100_000,  # B300: 1,400 W
    "accelerator.list_price_usd": 1e8,
    "servertype.gpus_per_node": 72,  # engine bound cluster.gpus_per_node (a GB200 NVL72 rack)
    "servertype.nics_per_node": 1_024,  # engine bound cluster.nics_per_node
    "servertype.nic_gbps": 1e5,  # ConnectX-8: 800 Gb/s
    "servertype.node_power_kw": 1_000,  # engine bound on_prem.node_power_kw (NVL72 rack: ~130 kW)
    "servertype.price_usd": 1e8,  # engine bound on_prem.server_usd
    "servertype.price_low_usd": 1e8,
    "servertype.price_high_usd": 1e8,
    "fabric.port_gbps": 1e5,  # XDR: 800 Gb/s
    "fabric.latency_us": 1e6,
    "fabric.collective_efficiency": 1.0,  # a fraction of line rate
    "switch.ports": 100_000,  # Quantum-X800: 144
    "switch.port_gbps": 1e5,
    "switch.price_usd": 1e8,
    "switch.power_w": 1e6,
    "storagetier.read_gbps": 1e7,
    "storagetier.write_gbps": 1e7,
    "storagetier.usd_per_tb_month": 1e6,  # engine bound cloud.storage_usd_per_tb_month
    "cloudoffering.gpu_count": 72,  # a node's GPUs, as servertype.gpus_per_node
    "cloudoffering.network_gbps": 1e6,  # p5: 3,200 Gb/s
    "cloudoffering.spot_preemptions_per_day": 1_000,  # engine bound cloud.spot_preemptions_per_day
    "cloudprice.usd_per_hour": 1e6,  # engine bound cloud.usd_per_node_hour (p5: ~$55/hour)
}


BOUNDED_MODELS: dict[str, type[models.Model]] = {
    m._meta.model_name: m  # type: ignore[misc]
    for m in (Accelerator, ServerType, Fabric, Switch, StorageTier, CloudOffering, CloudPrice)
}


def _add_upper_bounds() -> None:
    """Give each field in CATALOG_MAX a MaxValueValidator (before any field's validators are first read, so
    model validation, ModelSerializer's max_value and migrations all see it)."""
    for label, high in CATALOG_MAX.items():
        model_name, field_name = label.split(".")
        field: Any = BOUNDED_MODELS[model_name]._meta.get_field(field_name)
        field._validators = [*field._validators, MaxValueValidator(high, f"must be at most {high:g}")]
        field.__dict__.pop("validators", None)  # the cached_property, should anything have read it


_add_upper_bounds()
