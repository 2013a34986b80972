"""Comment bodies as safe HTML: CommonMark through markdown-it-py with raw HTML off (``<script>`` is shown
as text), images off (no tracking pixels), and only absolute http(s) URLs made links (javascript:, data:,
relative and every other URL stays text). Links open with rel="nofollow noopener"."""

from __future__ import annotations

from typing import Any

from markdown_it import MarkdownIt

_MD = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).disable(
    ["image", "html_inline", "html_block"]
)


def _http_only(url: str) -> bool:
    return url.strip().lower().startswith(("http://", "https://"))


_MD.validateLink = _http_only  # type: ignore[method-assign]


def _link_open(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    tokens[idx].attrSet("rel", "nofollow noopener")
    return str(renderer.renderToken(tokens, idx, options, env))


_MD.add_render_rule("link_open", _link_open)


def render_markdown(text: str) -> str:
    """The comment's Markdown as HTML safe to put in a page: every character the author typed is escaped
    unless it is Markdown syntax, and only http(s) links become links."""
    return str(_MD.render(text))
