"""Measured-run input and output serializers: input types the fields (the engine checks what they mean);
output adds the engine's estimate of the run, the signed error and the band."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from apps.measurements.models import MeasuredRun
from apps.measurements.selectors import RunRow
from apps.measurements.services import RUN_FIELDS
from apps.teams.params import team_field
from clusterdesigner.api import KnownKeysOnly, StrictJSONTypes


class MeasuredRunFormSerializer(serializers.ModelSerializer[MeasuredRun]):
    """A run's fields typed (a page's form gives strings, parsed as DRF parses them); what the engine cannot
    express is refused by the service."""

    model = serializers.JSONField(
        help_text='A preset {"preset": "llama3-8b"} or an inline shape, as a design\'s workload.model.'
    )
    step_time_s = serializers.FloatField(required=False, allow_null=True, min_value=1e-6, max_value=1e7)
    tokens_per_s = serializers.FloatField(required=False, allow_null=True, min_value=1e-6, max_value=1e13)
    peak_memory_gib = serializers.FloatField(required=False, allow_null=True, min_value=0.0, max_value=1e5)

    class Meta:
        model = MeasuredRun
        fields = list(RUN_FIELDS)

    def validate_model(self, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict) or not value:
            raise serializers.ValidationError('give a preset ({"preset": "llama3-8b"}) or the model\'s shape')
        return value


TEAM_HELP = "A team's id: the team's runs and switch (you must be a member; owner or editor to write)."


class MeasuredRunInputSerializer(KnownKeysOnly, StrictJSONTypes, MeasuredRunFormSerializer):
    """A run as the API takes it: JSON values of the wrong type and unknown keys are refused, naming them.
    ``team`` (on create only) makes it the team's run; a saved run moves into a team with ``move``."""

    team = team_field("The team whose run it is (one you own or edit); omitted or null: your own run.")

    class Meta(MeasuredRunFormSerializer.Meta):
        fields = [*RUN_FIELDS, "team"]


class TeamQuerySerializer(serializers.Serializer[Any]):
    team = team_field(TEAM_HELP)


class RunEstimateSerializer(serializers.Serializer[Any]):
    """The engine against the run: estimated and measured step time and tokens/s, the signed error on the
    rate (estimated / measured − 1), the band and whether the measured rate lies inside it."""

    regime = serializers.CharField()
    estimated_step_s = serializers.FloatField()
    measured_step_s = serializers.FloatField()
    estimated_tokens_per_s = serializers.FloatField()
    measured_tokens_per_s = serializers.FloatField()
    error = serializers.FloatField()
    band_low_tokens_per_s = serializers.FloatField()
    band_high_tokens_per_s = serializers.FloatField()
    band_basis = serializers.CharField()
    inside_band = serializers.BooleanField()
    estimated_memory_gib = serializers.FloatField()


class MeasuredRunSerializer(serializers.ModelSerializer[MeasuredRun]):
    """A saved run with the engine's estimate of it (null with ``problem`` when the engine no longer
    estimates it)."""

    model = serializers.JSONField()
    estimate = serializers.SerializerMethodField()
    problem = serializers.SerializerMethodField()

    class Meta:
        model = MeasuredRun
        fields = ["id", "team", *RUN_FIELDS, "estimate", "problem", "created_at", "updated_at"]

    def _row(self, run: MeasuredRun) -> RunRow | None:
        rows: dict[int, RunRow] = self.context.get("rows", {})
        return rows.get(run.pk)

    def get_estimate(self, run: MeasuredRun) -> dict[str, Any] | None:
        row = self._row(run)
        if row is None or row.comparison is None:
            return None
        return dict(RunEstimateSerializer(row.comparison).data)

    def get_problem(self, run: MeasuredRun) -> str:
        row = self._row(run)
        return row.problem if row else ""


class CsvImportSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    csv = serializers.CharField(trim_whitespace=False, max_length=1_000_000)
    team = team_field("The team whose runs they are (one you own or edit); omitted or null: your own.")


class LogInputSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    log = serializers.CharField(trim_whitespace=False, max_length=200_000)


class ParsedLogSerializer(serializers.Serializer[Any]):
    format = serializers.CharField()
    steps = serializers.IntegerField()
    step_time_s = serializers.FloatField(allow_null=True)
    iteration_time_ms = serializers.FloatField(allow_null=True)
    tflops_per_gpu = serializers.FloatField(allow_null=True)
    tokens_per_s_per_gpu = serializers.FloatField(allow_null=True)
    mfu = serializers.FloatField(allow_null=True)
    peak_memory_gib = serializers.FloatField(allow_null=True)
    global_batch = serializers.IntegerField(allow_null=True)


class ErrorSummarySerializer(serializers.Serializer[Any]):
    group = serializers.CharField()
    runs = serializers.IntegerField()
    median_abs_error = serializers.FloatField()
    p90_abs_error = serializers.FloatField()
    inside_band = serializers.FloatField()


class RegimeFactorSerializer(serializers.Serializer[Any]):
    key = serializers.CharField()
    factor = serializers.FloatField()
    runs = serializers.IntegerField()
    p10 = serializers.FloatField()
    p90 = serializers.FloatField()


class CalibrationSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    enabled = serializers.BooleanField()
    team = team_field("The team whose switch it is (you must be its owner or editor); omitted: your own.")


class SummarySerializer(serializers.Serializer[Any]):
    """A holder's runs against the engine (all, then by regime), and the calibration fitted on them: the
    user's own (personal runs, personal designs) or a team's (the team's runs, the team's designs)."""

    scope = serializers.ChoiceField(choices=["personal", "team"])
    team = serializers.IntegerField(allow_null=True)
    holder = serializers.CharField(help_text="Whose runs and switch, as an estimate's statement names it.")
    enabled = serializers.BooleanField()
    summary = ErrorSummarySerializer(many=True)
    factors = RegimeFactorSerializer(many=True)
    estimator = serializers.CharField()
