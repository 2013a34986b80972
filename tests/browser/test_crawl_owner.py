"""The crawl (tests/browser/crawl.py) as the owner of a private design, a share link and a finished
sweep; the design's export buttons are clicked too."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.crawl import crawl_as

pytestmark = pytest.mark.browser


def test_every_page_and_download_reachable_by_the_owner_works(
    browser: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    crawl_as(("owner",), "owner", browser, live_server, django_user_model)
