"""The site icon: linked from every page, and /favicon.ico (asked for regardless of the link) not a 404."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.django_db


def test_favicon_ico_redirects_to_the_svg_icon_which_is_served(client: Any) -> None:
    response = client.get("/favicon.ico")
    assert response.status_code == 302
    assert response["Location"] == "/static/favicon.svg"

    followed = client.get("/favicon.ico", follow=True)
    assert followed.status_code == 200
    assert followed.redirect_chain == [("/static/favicon.svg", 302)]
    assert followed["Content-Type"].startswith("image/svg+xml")
    body = b"".join(followed.streaming_content) if followed.streaming else followed.content
    assert body.lstrip().startswith(b"<svg") and b"ClusterDesigner" in body


def test_every_page_links_the_svg_icon(client: Any) -> None:
    body = client.get("/catalog/").content.decode()
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in body
