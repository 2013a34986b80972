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


def serving_estimate_with_deploy(
    *, request: Mapping[str, Any]
) -> tuple[serving.ServingResult, dict[str, str]]:
    """The estimate and its deploy texts from one catalog snapshot: rows changed between two reads (an
    accelerator renamed or deleted) must not make one answer of two catalogs."""
    catalog = selectors.engine_catalog()
    result = serving_estimate(request=request, catalog=catalog)
    return result, serving_deploy(request=request, result=result, catalog=catalog)


def serving_deploy(
    *, request: Mapping[str, Any], result: serving.ServingResult, catalog: CatalogSpecs | None = None
) -> dict[str, str]:
    """The estimate's chosen configuration as a ``vllm serve`` command line and a Kubernetes manifest, read
    with the catalog the estimate used (``catalog``; by default the database's)."""
    inp, _ = serving.parse_request(request, accelerators=(catalog or selectors.engine_catalog()).accelerators)
    return deploy_texts(dict(request), inp, result)
