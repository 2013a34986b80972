"""The crawl (tests/browser/crawl.py) as another ordinary user: the owner's private design and
sweep answer them 404."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.crawl import crawl_as

pytestmark = pytest.mark.browser


def test_every_page_and_download_reachable_by_another_user_works(
    browser: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    crawl_as(("other user",), "other-user", browser, live_server, django_user_model)
