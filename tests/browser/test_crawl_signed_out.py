"""The crawl (tests/browser/crawl.py) signed out, then as a reader of the owner's share link in the
same session (skipping the pages already seen); the share page's downloads are clicked too."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.crawl import crawl_as

pytestmark = pytest.mark.browser


def test_every_page_and_download_reachable_signed_out_and_by_share_link_works(
    browser: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    crawl_as(("signed out", "share link"), "signed-out", browser, live_server, django_user_model)
