"""Measured training runs of a user or a team, and the switch for calibrating the holder's estimates on them
(issue 40). Who reads and writes a run is apps/teams/access.py's rule, as for designs."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class MeasuredRun(models.Model):
    """One training run the user measured on a cluster: the model (a preset or an inline shape, as a design's
    ``workload.model``), the cluster, the layout and settings it ran with, and what was measured (step time
    and/or tokens per second, optionally peak memory). A personal run is its owner's; a team's run
    (``team`` set) its members' (apps/teams/access.py: viewers read, owners and editors write). A run saves
    only if the training engine can express it (services.run_validate)."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="measured_runs"
    )
    # Set: the run is the team's and calibrates the team's designs. PROTECT, as a team's designs are.
    team = models.ForeignKey(
        "teams.Team", on_delete=models.PROTECT, null=True, blank=True, related_name="measured_runs"
    )
    model = models.JSONField(
        help_text='A preset {"preset": "llama3-8b"} or an inline shape, as a design has.'
    )
    accelerator = models.CharField(max_length=60)
    nodes = models.PositiveIntegerField()
    gpus_per_node = models.PositiveIntegerField(default=8)
    fabric = models.CharField(max_length=60)
    tp = models.PositiveIntegerField(default=1)
    pp = models.PositiveIntegerField(default=1)
    dp = models.PositiveIntegerField()
    cp = models.PositiveIntegerField(default=1)
    ep = models.PositiveIntegerField(default=1)
    vpp = models.PositiveIntegerField(default=1)
    micro_batch = models.PositiveIntegerField(default=1)
    global_batch = models.PositiveIntegerField(help_text="Sequences per optimizer step.")
    seq_len = models.PositiveIntegerField()
    recompute = models.CharField(max_length=20, default="none")
    sharding = models.CharField(max_length=20, default="none")
    precision = models.CharField(max_length=20, default="bf16")
    framework = models.CharField(max_length=40, blank=True)
    framework_version = models.CharField(max_length=60, blank=True)
    step_time_s = models.FloatField(null=True, blank=True)
    tokens_per_s = models.FloatField(null=True, blank=True)
    peak_memory_gib = models.FloatField(null=True, blank=True)
    measured_on = models.DateField()
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-measured_on", "-id"]
        indexes = [models.Index(fields=["owner", "-measured_on"], name="measurements_owner_date_idx")]

    def __str__(self) -> str:
        return f"{self.model} on {self.nodes} × {self.accelerator} ({self.measured_on})"

    @property
    def model_label(self) -> str:
        """The preset's slug, else the shape's name, else "custom shape"."""
        model = self.model if isinstance(self.model, dict) else {}
        return str(model.get("preset") or model.get("name") or "custom shape")

    @property
    def tokens_per_step(self) -> int:
        return self.global_batch * self.seq_len

    @property
    def measured_step_s(self) -> float:
        """The measured step time: as entered, else global batch × sequence length ÷ tokens/s."""
        if self.step_time_s is not None:
            return self.step_time_s
        assert self.tokens_per_s is not None  # services.run_validate requires one of the two
        return self.tokens_per_step / self.tokens_per_s


class CalibrationSetting(models.Model):
    """Whether the holder's designs are estimated with the calibration fitted on the holder's measured runs:
    a user's (``owner``: their personal designs, from their personal runs) or a team's (``team``: the team's
    designs, from the team's runs); exactly one of the two is set. ``changed_at`` moves on every toggle and
    every write to the holder's runs, so a kept evaluation is keyed by it.

    While switched on, the row also keeps the calibration fitted on the holder's runs (``fit``: the engine's
    UserCalibration as JSON), written by the services that move the stamp, with what it was fitted at: the
    stamp (``fitted_at``), the engine version and the catalog's digest (the runs are estimated against the
    catalog). An evaluation reads it rather than fitting the runs (apps.designs.pricing) while all three are
    current, and fits again (services.calibration_refit) when the catalog or the engine changed since."""

    owner = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="calibration_setting",
    )
    team = models.OneToOneField(
        "teams.Team", on_delete=models.CASCADE, null=True, blank=True, related_name="calibration_setting"
    )
    enabled = models.BooleanField(default=False)
    changed_at = models.DateTimeField()
    fit = models.JSONField(null=True, blank=True)
    fitted_at = models.DateTimeField(null=True, blank=True)
    fitted_engine = models.PositiveIntegerField(null=True, blank=True)
    fitted_catalog = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["team", "owner"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(owner__isnull=False, team__isnull=True)
                | models.Q(owner__isnull=True, team__isnull=False),
                name="measurements_calibration_one_holder",
            )
        ]

    def __str__(self) -> str:
        return f"{self.team or self.owner}: {'on' if self.enabled else 'off'}"
