from __future__ import annotations

from typing import Any


def test_catalog_page_lists_accelerators_side_by_side(client: Any, catalog: Any) -> None:
    html = client.get("/catalog/").content.decode()
    assert 'data-slug="h100-sxm"' in html and 'data-slug="mi300x"' in html
    assert "989.4" in html  # dense BF16, not the 1,979 sparse headline


def test_catalog_page_uses_the_api_filters(client: Any, catalog: Any) -> None:
    html = client.get("/catalog/", {"vendor": "amd"}).content.decode()
    assert 'data-slug="mi300x"' in html and 'data-slug="h100-sxm"' not in html


def test_price_and_infrastructure_pages_render(client: Any, catalog: Any) -> None:
    assert "p5.48xlarge" in client.get("/catalog/prices/", {"provider": "aws"}).content.decode()
    assert "InfiniBand" in client.get("/catalog/infrastructure/").content.decode()
