"""Analysis reads."""

from __future__ import annotations

from django.db.models import Sum

from apps.analysis.models import Analysis, AnalysisChunk


def analysis_progress(*, analysis: Analysis) -> tuple[int, int]:
    """(items done, items in all): the sizes of the run's finished chunks, and its total."""
    done = analysis.chunks.filter(status=AnalysisChunk.Status.DONE).aggregate(n=Sum("size"))["n"] or 0
    return done, analysis.progress_total
