from __future__ import annotations

from typing import Any, TypeVar

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Model
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import URLPattern, path
from django.utils import timezone

from apps.catalog import services
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
from apps.catalog.skypilot import SKYPILOT_CLOUDS
from clusterdesigner.errors import Conflict

_Row = TypeVar("_Row", bound=Model)


class RetirableAdmin(admin.ModelAdmin[_Row]):
    """A row that designs, plans, sweeps or defaults use is not deleted but retired: its delete page answers
    409 naming the users (as the API's DELETE does), the bulk delete action is replaced by "Retire"."""

    actions = ["retire_selected", "unretire_selected"]

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def delete_view(self, request: HttpRequest, object_id: str, extra_context: Any = None) -> HttpResponse:
        row = self.get_object(request, unquote(object_id))
        found = services.catalog_row_users(row=row) if row is not None else []
        if found and self.has_delete_permission(request, row):
            context = {
                **self.admin_site.each_context(request),
                "title": f"Cannot delete {row}",
                "row": row,
                "users": found,
                "opts": self.model._meta,
            }
            return render(request, "admin/catalog/in_use.html", context, status=409)
        return super().delete_view(request, object_id, extra_context)

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        try:
            services.catalog_row_delete(row=obj)
        except Conflict as exc:  # used since the page was shown
            raise PermissionDenied(exc.message) from exc

    @admin.action(description="Retire selected (hide from pickers, keep for what uses them)")
    def retire_selected(self, request: HttpRequest, queryset: Any) -> None:
        count = queryset.update(retired=True)
        self.message_user(request, f"Retired {count}.", messages.SUCCESS)

    @admin.action(description="Return selected to the pickers")
    def unretire_selected(self, request: HttpRequest, queryset: Any) -> None:
        count = queryset.update(retired=False)
        self.message_user(request, f"Returned {count} to the pickers.", messages.SUCCESS)


@admin.register(Vendor)
class VendorAdmin(admin.ModelAdmin[Vendor]):
    list_display = ["name", "slug"]
    search_fields = ["name", "slug"]


@admin.register(Accelerator)
class AcceleratorAdmin(RetirableAdmin[Accelerator]):
    list_display = [
        "name",
        "vendor",
        "memory_gib",
        "hbm_bandwidth_tbps",
        "bf16_dense_tflops",
        "fp8_dense_tflops",
        "scaleup_bandwidth_gbps",
        "tdp_w",
        "as_of",
    ]
    list_filter = ["retired", "vendor", "family", "has_nvlink"]
    search_fields = ["name", "slug", "source"]


@admin.register(ServerType)
class ServerTypeAdmin(RetirableAdmin[ServerType]):
    list_display = [
        "name",
        "accelerator",
        "gpus_per_node",
        "nics_per_node",
        "nic_gbps",
        "node_power_kw",
        "price_usd",
        "price_low_usd",
        "price_high_usd",
    ]
    list_filter = ["retired", "vendor", "accelerator"]
    search_fields = ["name", "slug"]


@admin.register(Fabric)
class FabricAdmin(RetirableAdmin[Fabric]):
    list_display = ["name", "kind", "port_gbps", "latency_us", "collective_efficiency"]
    list_filter = ["retired", "kind"]
    search_fields = ["name", "slug"]


@admin.register(Switch)
class SwitchAdmin(admin.ModelAdmin[Switch]):
    list_display = ["name", "fabric_kind", "ports", "port_gbps", "price_usd", "power_w"]
    list_filter = ["fabric_kind", "vendor"]
    search_fields = ["name", "slug"]


@admin.register(StorageTier)
class StorageTierAdmin(RetirableAdmin[StorageTier]):
    list_display = ["name", "kind", "read_gbps", "write_gbps", "scope", "usd_per_tb_month"]
    list_filter = ["retired", "kind", "scope"]
    search_fields = ["name", "slug"]


class CloudPriceInline(admin.TabularInline[CloudPrice, CloudOffering]):
    model = CloudPrice
    extra = 0


@admin.register(CloudOffering)
class CloudOfferingAdmin(RetirableAdmin[CloudOffering]):
    list_display = ["instance_type", "provider", "region", "accelerator", "gpu_count", "needs_review"]
    list_filter = ["retired", "provider", "accelerator", "needs_review"]
    search_fields = ["instance_type", "slug", "region"]
    inlines = [CloudPriceInline]


class PriceImportForm(forms.Form):
    file = forms.FileField(help_text="CSV columns: " + ", ".join(services.PRICE_COLUMNS))


class SkyPilotImportForm(forms.Form):
    cloud = forms.ChoiceField(choices=[(c, c) for c in SKYPILOT_CLOUDS], help_text="The file's cloud.")
    file = forms.FileField(help_text="SkyPilot's vms.csv of that cloud, e.g. ~/.sky/catalogs/v7/aws/vms.csv.")
    as_of = forms.DateField(required=False, help_text="Date to store the prices under (default: today).")
    all_regions = forms.BooleanField(
        required=False, help_text="Store every region's price, not only the cheapest region's."
    )


@admin.register(CloudPrice)
class CloudPriceAdmin(admin.ModelAdmin[CloudPrice]):
    list_display = ["offering", "pricing_model", "usd_per_hour", "currency", "region", "as_of"]
    list_filter = ["pricing_model", "offering__provider", "currency"]
    search_fields = ["offering__slug", "offering__instance_type", "source"]
    actions = ["export_csv"]
    change_list_template = "admin/catalog/cloudprice/change_list.html"

    def get_urls(self) -> list[URLPattern]:
        return [
            path(
                "import-csv/", self.admin_site.admin_view(self.import_csv), name="catalog_cloudprice_import"
            ),
            path(
                "import-skypilot/",
                self.admin_site.admin_view(self.import_skypilot),
                name="catalog_cloudprice_import_skypilot",
            ),
        ] + super().get_urls()

    def import_csv(self, request: HttpRequest) -> HttpResponse:
        form = PriceImportForm(request.POST or None, request.FILES or None)
        errors: list[services.RowError] = []
        if request.method == "POST" and form.is_valid():
            try:
                saved = services.cloud_price_import_csv(content=form.cleaned_data["file"].read())
            except services.PriceImportError as exc:
                errors = exc.errors
            else:
                self.message_user(request, f"Imported {len(saved)} price(s).", messages.SUCCESS)
                return HttpResponseRedirect("../")
        context = {
            **self.admin_site.each_context(request),
            "form": form,
            "errors": errors,
            "title": "Import prices",
        }
        return render(request, "admin/catalog/cloudprice/import.html", context)

    def import_skypilot(self, request: HttpRequest) -> HttpResponse:
        """The same import as `manage.py import_prices --skypilot` and the API, one cloud's file at a time;
        the page shows what was mapped and what was skipped, with why. It adds prices and may add offerings:
        the admin user needs both permissions."""
        if not (self.has_add_permission(request) and request.user.has_perm("catalog.add_cloudoffering")):
            raise PermissionDenied
        form = SkyPilotImportForm(request.POST or None, request.FILES or None)
        errors: list[services.RowError] = []
        result: services.SkyPilotImport | None = None
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            try:
                result = services.cloud_price_import_skypilot(
                    cloud=data["cloud"],
                    content=data["file"].read(),
                    as_of=data["as_of"] or timezone.localdate(),
                    all_regions=data["all_regions"],
                )
            except services.PriceImportError as exc:
                errors = exc.errors
            else:
                self.message_user(
                    request,
                    f"Imported {len(result.saved)} {result.cloud} price(s); created "
                    f"{len(result.created_offerings)} offering(s) flagged for review.",
                    messages.SUCCESS,
                )
        context = {
            **self.admin_site.each_context(request),
            "form": form,
            "errors": errors,
            "result": result,
            "title": "Import SkyPilot prices",
        }
        return render(request, "admin/catalog/cloudprice/import_skypilot.html", context)

    @admin.action(description="Export selected prices as CSV")
    def export_csv(self, request: HttpRequest, queryset: object) -> HttpResponse:
        response = HttpResponse(services.cloud_price_export_csv(prices=queryset), content_type="text/csv")  # type: ignore[arg-type]
        response["Content-Disposition"] = 'attachment; filename="cloud-prices.csv"'
        return response


@admin.register(ResidualValuePoint)
class ResidualValuePointAdmin(admin.ModelAdmin[ResidualValuePoint]):
    list_display = ["generation", "series", "age_years", "fraction_of_new", "as_of"]
    list_filter = ["generation", "series"]


@admin.register(RentalPricePoint)
class RentalPricePointAdmin(admin.ModelAdmin[RentalPricePoint]):
    list_display = ["generation", "series", "basis", "usd_per_gpu_hour", "as_of"]
    list_filter = ["generation", "basis", "series"]
