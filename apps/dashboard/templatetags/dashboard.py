"""Display filters: money with its currency and thousands separators, time in hours or days, memory in GiB."""

from __future__ import annotations

from typing import Any

from django import template

from clusterdesigner.engine.cost.verdict import format_value
from clusterdesigner.engine.design.evaluation import price_origin as origin_words

register = template.Library()


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _shown(value: Any, show: Any) -> str:
    number = _number(value)
    return "–" if number is None else show(number)


@register.filter
def usd(value: Any) -> str:
    return _shown(value, lambda n: f"-${abs(n):,.0f}" if n < 0 else f"${n:,.0f}")


@register.filter
def usd2(value: Any) -> str:
    return _shown(value, lambda n: f"${n:,.2f}")


@register.filter
def duration(days: Any) -> str:
    """Days as "41.5 days", or hours below two days (a run of 30 hours reads better as hours)."""
    return _shown(days, lambda n: f"{n * 24:,.1f} hours" if n < 2 else f"{n:,.1f} days")


@register.filter
def band_days(days: Any, training: Any) -> str:
    """``days`` (failure-free or expected) at the ends of the training estimate's error band, "16.6–21.0
    days": the band's days over the estimate's failure-free days, applied to ``days`` (expected days are
    failure-free days over the goodput, so they scale alike). Empty without a band."""
    band = getattr(training, "error_band", None)
    free, number = _number(getattr(training, "time_to_train_days", None)), _number(days)
    if band is None or not free or number is None:
        return ""
    low, high = number * band.days_low / free, number * band.days_high / free
    return f"{duration(low).removesuffix(' days').removesuffix(' hours')}–{duration(high)}"


@register.filter
def gib(value: Any) -> str:
    return _shown(value, lambda n: f"{n:,.1f} GiB")


@register.filter
def params(value: Any) -> str:
    """A parameter count as "70.6 B", "1.01 T" or "405 M" (an 11-digit count is cut off in a select box)."""

    def show(n: float) -> str:
        scale, unit = next(((s, u) for s, u in ((1e12, "T"), (1e9, "B"), (1e6, "M")) if n >= s), (1.0, ""))
        return f"{n / scale:.3g} {unit}".strip()

    return _shown(value, show)


@register.filter
def pct(value: Any) -> str:
    """A break-even utilization: outside (0, 1] owning never (or always) wins, so say so."""
    return _shown(value, lambda n: "never (outside 0–100 %)" if n > 1 or n < 0 else f"{n * 100:.1f} %")


@register.filter
def pct_plain(value: Any) -> str:
    return _shown(value, lambda n: f"{n * 100:.1f} %")


@register.filter
def get(mapping: Any, key: Any) -> Any:
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.filter
def num(value: Any) -> Any:
    """A number with thousands separators and at most 6 significant digits; anything else unchanged."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    if isinstance(value, int) or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:,.6g}" if abs(value) < 1e6 else f"{value:,.0f}"


@register.filter
def cell(value: Any, fmt: str) -> Any:
    """A compare-table cell in its row's format."""
    if value is None:
        return "–"
    if fmt == "yesno":
        return "yes" if value else "no"
    if fmt == "int":
        return f"{float(value):,.0f}"
    formatter = {"usd": usd, "usd2": usd2, "duration": duration, "gib": gib, "pct_plain": pct_plain}.get(fmt)
    return formatter(value) if formatter else value


SPEC_FIELD_LABELS = {
    "cluster.nodes": "Nodes",
    "cluster.gpus_per_node": "GPUs per node",
    "cluster.accelerator": "Accelerator",
    "cluster.fabric": "Fabric",
    "cluster.storage": "Storage",
    "workload.model": "Model preset",
    "workload.training.tokens": "Training tokens",
    "workload.training.global_batch_tokens": "Global batch (tokens)",
    "workload.training.precision": "Precision",
    "parallelism": "Parallel layout",
    "parallelism.tp": "Tensor parallel (TP)",
    "parallelism.pp": "Pipeline parallel (PP)",
    "parallelism.dp": "Data parallel (DP)",
    "parallelism.cp": "Context parallel (CP)",
    "parallelism.vpp": "Virtual pipeline stages (VPP)",
    "parallelism.micro_batch": "Micro-batch",
    "parallelism.recompute": "Recompute",
    "parallelism.sharding": "Sharding",
}


@register.filter
def spec_field_label(path: Any) -> str:
    """A spec path (``spec.cluster.nodes``, ``spec.costs.cloud.0.offering``) as the editor labels its
    field, for text shown to people: "Nodes", "Cloud offering 1: offering"."""
    text = str(path or "").removeprefix("spec.")
    for prefix in sorted(SPEC_FIELD_LABELS, key=len, reverse=True):
        if text == prefix or text.startswith(prefix + "."):
            return SPEC_FIELD_LABELS[prefix]
    parts = text.split(".")
    if parts[:2] == ["costs", "cloud"] and len(parts) > 2 and parts[2].isdigit():
        rest = " ".join(parts[3:]).replace("_", " ")
        return f"Cloud offering {int(parts[2]) + 1}" + (f": {rest}" if rest else "")
    return parts[-1].replace("_", " ").capitalize() if parts[-1] else "the design"


@register.filter
def when(value: Any) -> str:
    """A timestamp (a datetime or the ISO text a stored result holds) to the minute with its time zone, in the
    site's zone: "2026-12-03 09:41 UTC"."""
    import datetime as dt

    from django.utils import timezone

    if isinstance(value, str):
        text = value
        try:
            value = dt.datetime.fromisoformat(text)
        except ValueError:
            return text
    if not isinstance(value, dt.datetime):
        return "–"
    if timezone.is_naive(value):
        value = timezone.make_aware(value, dt.UTC)
    local = timezone.localtime(value)
    return f"{local:%Y-%m-%d %H:%M} {local.tzname()}"


@register.filter
def pricing_label(model: Any) -> str:
    """A pricing model's key (``reserved_1y``) as people read it ("reserved 1 y")."""
    from clusterdesigner.charts import PRICING_LABELS

    return PRICING_LABELS.get(str(model), str(model).replace("_", " "))


@register.filter
def input_value(value: Any, unit: str) -> str:
    """An input's value in its unit, as the verdict writes it ("26.9%", "$412,003 per node"); "–" for none."""
    return _shown(value, lambda n: format_value(n, unit))


@register.filter
def price_origin(row: Any) -> str:
    """Where a resolved price came from (clusterdesigner.engine.design.evaluation.price_origin), for a row
    read as an object or a dict."""

    def field(name: str) -> Any:
        return row.get(name) if isinstance(row, dict) else getattr(row, name, None)

    return origin_words(field("origin"), field("entry_id"), field("as_of"))


@register.filter
def price_rows(assumptions: Any) -> list[Any]:
    """The resolved prices among an evaluation's assumptions (``prices.*``)."""
    rows = assumptions or ()
    return [a for a in rows if str(a.get("name") if isinstance(a, dict) else a.name).startswith("prices.")]
