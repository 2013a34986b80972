"""Templates name their links with ``{% url %}``: no ``href``, ``action`` or ``src`` starts with a path
written by hand, so a route that moves moves every link to it."""

from __future__ import annotations

import re
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
HAND_WRITTEN = re.compile(r"""\b(?:href|action|src)\s*=\s*["']/""")


def hand_written_urls(text: str) -> list[str]:
    return [m.group(0) for m in HAND_WRITTEN.finditer(text)]


def test_the_pattern_finds_a_hand_written_link_and_passes_a_reversed_one() -> None:
    assert hand_written_urls('<a class="brand" href="/">Home</a> <form action=\'/x/\'>')
    assert not hand_written_urls('<a href="{% url \'dashboard:home\' %}">Home</a> <a href="https://x.org/">')


def test_no_template_writes_a_url_by_hand() -> None:
    found = {
        str(path.relative_to(TEMPLATES)): hits
        for path in sorted(TEMPLATES.rglob("*.html"))
        if (hits := hand_written_urls(path.read_text()))
    }
    assert found == {}
