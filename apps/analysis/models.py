"""Analyses run by Celery workers: evaluations with layout search, sweeps, comparisons, recommendations."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Analysis(models.Model):
    """One requested analysis. Its ``status`` row is the truth; workers only ever move it forward.

    ``snapshot`` holds everything the result depends on (parameters, design specs, catalog rows), and
    ``input_hash`` its SHA-256, so the same input twice returns the stored result.
    """

    class Kind(models.TextChoices):
        EVALUATE = "evaluate", "Evaluate one design (with layout search)"
        SWEEP = "sweep", "Sweep accelerators × node counts × pricing models"
        COMPARE = "compare", "Compare 2 to 6 designs"
        RECOMMEND = "recommend", "Recommend a cluster for a model, budget and deadline"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="analyses")
    # Set for an evaluation of a team's design: the team's members follow it (apps/teams/access.py).
    team = models.ForeignKey(
        "teams.Team", on_delete=models.CASCADE, null=True, blank=True, related_name="analyses"
    )
    kind = models.CharField(max_length=20, choices=Kind.choices)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    params = models.JSONField(help_text="The request as the user gave it.")
    snapshot = models.JSONField(help_text="Every input the result depends on, catalog rows included.")
    input_hash = models.CharField(max_length=64, db_index=True)
    design_version = models.ForeignKey(
        "designs.DesignVersion", on_delete=models.SET_NULL, null=True, blank=True, related_name="analyses"
    )
    progress_total = models.PositiveIntegerField(default=0)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    deadline_at = models.DateTimeField(help_text="After this a run still going is marked failed.")
    requeued_at = models.DateTimeField(
        null=True, blank=True, help_text="When chunks were last sent to the queue again after a stall."
    )
    requeues = models.PositiveIntegerField(default=0)

    # A live analysis (pending, running or succeeded) is the answer to its input for its owner: at most one
    # per (owner, input_hash), so two identical requests at once cannot both start one. A failed one is
    # history.
    LIVE_STATUSES = (Status.PENDING, Status.RUNNING, Status.SUCCEEDED)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "analyses"
        indexes = [models.Index(fields=["owner", "-created_at"], name="analysis_owner_created_idx")]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "input_hash"],
                condition=models.Q(status__in=["pending", "running", "succeeded"]),
                name="analysis_unique_live_input",
            )
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk} ({self.status})"


class AnalysisChunk(models.Model):
    """A slice of an analysis's items that one worker computes. Done chunks are never recomputed, so a chunk
    redelivered after a worker died is neither lost nor counted twice."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    analysis = models.ForeignKey(Analysis, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    items = models.JSONField()
    size = models.PositiveIntegerField()
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    result = models.JSONField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    worker = models.CharField(max_length=200, blank=True)
    started_at = models.DateTimeField(null=True, blank=True, help_text="When a worker last took it.")
    heartbeat_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="The last sign of life of the worker computing it (renewed every "
        "ANALYSIS_HEARTBEAT_S); older than ANALYSIS_LEASE_S, the worker is taken for dead and the "
        "chunk is queued again.",
    )
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["analysis", "index"]
        constraints = [
            models.UniqueConstraint(fields=["analysis", "index"], name="analysis_chunk_unique_index")
        ]

    def __str__(self) -> str:
        return f"analysis {self.analysis_id} chunk {self.index} ({self.status})"
