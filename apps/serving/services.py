"""Serving estimates: the request against the catalog, through the serving engine (no writes)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apps.catalog import selectors
from apps.serving.deploy import deploy_texts
from clusterdesigner.engine import serving
from clusterdesigner.engine.catalog import CatalogSpecs


def serving_estimate(
    *, request: Mapping[str, Any], catalog: CatalogSpecs | None = None
) -> serving.ServingResult:
    """Estimate serving for ``request`` (docs/serving-engine.md) on the database's catalog (or ``catalog``).
    Raises the engine's errors, which the API's exception handler turns into a 400 naming the field."""
    return serving.estimate(request, catalog=catalog or selectors.engine_catalog())


def serving_deploy(*, request: Mapping[str, Any], result: serving.ServingResult) -> dict[str, str]:
    """The estimate's chosen configuration as a ``vllm serve`` command line and a Kubernetes manifest."""
    inp, _ = serving.parse_request(request, accelerators=selectors.engine_catalog().accelerators)
    return deploy_texts(dict(request), inp, result)
