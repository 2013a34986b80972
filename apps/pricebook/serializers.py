"""Price book API serializers: one for the entry as read and written (the kind's rules are the service's,
apps.pricebook.services, so the API and the CSV import check an entry the same way)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import serializers

from apps.catalog.serializers import PriceImportSerializer
from apps.pricebook.models import PriceEntry
from apps.teams.params import team_field
from clusterdesigner.engine.core.offerings import PRICING_MODELS
from clusterdesigner.engine.cost.cost_request import COLO_BASES

# The first four bytes of a ZIP archive, which an XLSX workbook is (ECMA-376 Part 2, Open Packaging).
XLSX_MAGIC = b"PK\x03\x04"
# The columns a price book CSV may have: the entry's writable fields but its team (the import's).
IMPORT_COLUMNS = (
    "kind",
    "accelerator",
    "gpus_per_node",
    "provider",
    "offering",
    "pricing_model",
    "value",
    "network_included",
    "support_years",
    "colocation_basis",
    "network_item",
    "switch_model",
    "region",
    "duration_hours",
    "block_nodes",
    "valid_from",
    "expires_on",
    "source",
    "attachment_name",
)


class PriceEntrySerializer(serializers.ModelSerializer[PriceEntry]):
    """A dated price of the owner's or the team's, with its provenance."""

    team = team_field("The team's id, for a team's entry (set when it is made).", source="team_id")
    pricing_model = serializers.ChoiceField(choices=PRICING_MODELS, required=False, allow_blank=True)
    colocation_basis = serializers.ChoiceField(choices=COLO_BASES, required=False, allow_blank=True)
    network_item = serializers.ChoiceField(
        choices=PriceEntry.NetworkItem.choices, required=False, allow_blank=True
    )
    value = serializers.FloatField(help_text="In the kind's unit (see unit).")
    unit = serializers.CharField(read_only=True)
    entered_by = serializers.CharField(source="entered_by.username", read_only=True, default=None)

    class Meta:
        model = PriceEntry
        fields = ["id", "team", *IMPORT_COLUMNS, "unit", "entered_by", "entered_at", "updated_at"]
        read_only_fields = ["entered_at", "updated_at"]


class PriceBookImportSerializer(PriceImportSerializer):
    """A price book file (CSV or XLSX, one entry a row), into the user's own book or a team's."""

    file = serializers.FileField(
        help_text="CSV or XLSX (its first sheet) whose header names the columns, any of: "
        + ", ".join(IMPORT_COLUMNS)
        + " (kind, value and valid_from required; an empty cell is a field left out); CSV as UTF-8; at most"
        " DATA_UPLOAD_MAX_MEMORY_SIZE bytes (2 MiB by default)."
    )
    team = team_field("Import into this team's book.", allow_null=False)

    def validate_file(self, value: Any) -> str | bytes:  # type: ignore[override]
        """An XLSX workbook's bytes (told by its ZIP signature), else the CSV's text (the catalog import's
        checks: size, UTF-8, no NUL bytes)."""
        head = value.read(len(XLSX_MAGIC))
        value.seek(0)
        if head != XLSX_MAGIC:
            return super().validate_file(value)
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is not None and value.size > limit:
            raise serializers.ValidationError(f"file is {value.size} bytes; the limit is {limit} bytes")
        return bytes(value.read())


class PriceBookImportResultSerializer(serializers.Serializer[Any]):
    imported = serializers.IntegerField()


class PriceBookExportQuerySerializer(serializers.Serializer[Any]):
    format = serializers.ChoiceField(choices=["csv", "xlsx"], help_text="The file's format.")
    team = team_field("A team's book (one you are a member of); omitted: your own.", allow_null=False)
