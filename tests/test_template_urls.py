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


# The scripts take their URLs from the page (data-*-url attributes built with {% url %}), never a path of
# their own: a string literal that starts with a path ("/api/v1/designs/", "/sweep/") is one written by hand.
STATIC_JS = TEMPLATES.parent / "static" / "js"
JS_PATH_LITERAL = re.compile(r"""["'`]/[A-Za-z_]""")


def test_the_script_pattern_finds_a_hand_written_path_and_passes_a_reversed_one() -> None:
    assert JS_PATH_LITERAL.search('api.request("POST", "/api/v1/designs/", body)')
    assert JS_PATH_LITERAL.search("fetch('/designs/' + id + '/results/')")
    assert not JS_PATH_LITERAL.search('api.request("POST", urls.apiListUrl, body)')
    assert not JS_PATH_LITERAL.search('if (target.charAt(0) === "/") go(target)')


def test_no_script_writes_a_url_by_hand() -> None:
    scripts = sorted(STATIC_JS.rglob("*.js"))
    assert scripts, "no scripts found: the test would pass on nothing"
    found = {
        str(path.relative_to(STATIC_JS)): [m.group(0) for m in JS_PATH_LITERAL.finditer(path.read_text())]
        for path in scripts
    }
    assert {name: hits for name, hits in found.items() if hits} == {}
