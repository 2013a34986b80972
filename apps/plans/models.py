"""Saved capacity plans, their versions and their solved results."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class CapacityPlan(models.Model):
    """A capacity plan someone saved: workloads over a horizon and the capacity one may buy. Its current spec
    lives in the newest PlanVersion; ``version`` is that version's number. Only the owner sees it, or the
    members of its team when ``team`` is set (apps/teams/access.py)."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="capacity_plans"
    )
    team = models.ForeignKey(
        "teams.Team", on_delete=models.PROTECT, null=True, blank=True, related_name="capacity_plans"
    )
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-id"]
        indexes = [models.Index(fields=["owner", "-updated_at"], name="plans_owner_updated_idx")]

    def __str__(self) -> str:
        return self.name


class PlanVersion(models.Model):
    """One saved state of a plan: the spec as the user wrote it (training runs may name saved designs).
    Never edited."""

    plan = models.ForeignKey(CapacityPlan, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    spec = models.JSONField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["plan", "-number"]
        constraints = [models.UniqueConstraint(fields=["plan", "number"], name="plans_version_unique_number")]

    def __str__(self) -> str:
        return f"{self.plan} v{self.number}"


class PlanSolution(models.Model):
    """A solved plan version: the engine input it was solved from (designs resolved to GPU-hours, prices as
    given) and the engine's result, keyed by the input's hash so the same input is solved once."""

    version = models.ForeignKey(PlanVersion, on_delete=models.CASCADE, related_name="solutions")
    input_hash = models.CharField(max_length=64)
    snapshot = models.JSONField()
    result = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["version", "input_hash"], name="plans_solution_unique_input")
        ]

    def __str__(self) -> str:
        return f"solution {self.pk} of {self.version}"


class PlanShareLink(models.Model):
    """A read-only link, for people without an account (finance), to one frozen solution of a plan. Only the
    token's SHA-256 is stored (apps.designs.models.hash_token, as for design share links)."""

    plan = models.ForeignKey(CapacityPlan, on_delete=models.CASCADE, related_name="share_links")
    solution = models.ForeignKey(PlanSolution, on_delete=models.CASCADE, related_name="share_links")
    token_hash = models.CharField(max_length=64, unique=True)
    token_hint = models.CharField(max_length=8)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"share {self.token_hint}… of {self.plan}"

    @property
    def is_active(self) -> bool:
        now = timezone.now()
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)


class PlanRun(models.Model):
    """A solve of a large plan version queued to a Celery worker. ``status`` is the truth; the result is the
    PlanSolution it produced. ``progress`` is 0 or 1: a MILP has no meaningful partial count."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    version = models.ForeignKey(PlanVersion, on_delete=models.CASCADE, related_name="runs")
    input_hash = models.CharField(max_length=64)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True)
    solution = models.ForeignKey(
        PlanSolution, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["version", "input_hash"], name="plans_run_unique_input")
        ]

    def __str__(self) -> str:
        return f"run {self.pk} of {self.version} ({self.status})"
