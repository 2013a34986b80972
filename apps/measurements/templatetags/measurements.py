from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


@register.filter
def signed_pct(value: Any) -> str:
    """A signed fraction as a percentage, "+21.0 %" or "−23.8 %" (an error or a band edge)."""
    if not isinstance(value, (int, float)):
        return "—"
    return f"{100 * value:+.1f} %".replace("-", "−")
