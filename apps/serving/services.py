"""Serving estimates: the request against the catalog, priced through the asker's price book (or a team's,
or a design's owner's), through the serving engine (no writes)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from apps.catalog import selectors
from apps.designs.pricing import OfferingPrices, PriceOwner, offerings_priced
from apps.serving.deploy import deploy_texts
from apps.sites.selectors import site_get
from clusterdesigner.engine.core.catalog import CatalogSpecs
from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.serving import serving
from clusterdesigner.engine.serving_cost import serving_cost

DEFAULT_GPUS_PER_NODE = 8  # the serving engine's default (serving.parse_request)


@dataclasses.dataclass(frozen=True)
class PricedEstimate:
    """A serving estimate, the request it was priced with (the book's owning figures written in) and where
    each price came from (``prices``: apps.designs.pricing's rows; empty when the request names no known
    accelerator)."""

    result: serving.ServingResult
    request: dict[str, Any]
    catalog: CatalogSpecs
    prices: list[dict[str, Any]]
    findings: list[dict[str, Any]]


def serving_estimate(
    *, request: Mapping[str, Any], catalog: CatalogSpecs | None = None
) -> serving.ServingResult:
    """Estimate serving for ``request`` (docs/serving-engine.md) on the database's catalog (or ``catalog``).
    Raises the engine's errors, which the API's exception handler turns into a 400 naming the field."""
    return serving_cost.estimate(request, catalog=catalog or selectors.engine_catalog())


def serving_site(*, user: Any, site_id: int | None) -> dict[str, Any] | None:
    """The saved site an estimate's owning option is priced at (its engine object, apps.sites), when
    ``user`` can read it (theirs, or a team's they belong to); InputError naming ``site`` otherwise,
    whether it exists or not (and for a visitor, who has no sites)."""
    if site_id is None:
        return None
    found = site_get(user=user, site_id=site_id) if getattr(user, "is_authenticated", False) else None
    if found is None:
        raise InputError(f"you have no site {site_id}", field="site")
    return found.to_engine()


def _book(
    request: Mapping[str, Any],
    catalog: CatalogSpecs,
    owner: PriceOwner | None,
    site: Mapping[str, Any] | None = None,
) -> OfferingPrices | None:
    """The accelerator's prices through ``owner``'s book (apps.designs.pricing, as every consumer's): None
    when the request names no accelerator the catalog has (the engine's own error names it)."""
    accelerator = request.get("accelerator")
    gpus_per_node = request.get("gpus_per_node", DEFAULT_GPUS_PER_NODE)
    cost = request.get("cost")
    on_prem = cost.get("on_prem") if isinstance(cost, Mapping) else None
    if (
        not isinstance(accelerator, str)
        or accelerator not in catalog.accelerators
        or isinstance(gpus_per_node, bool)
        or not isinstance(gpus_per_node, int)
        or gpus_per_node < 1
        or (on_prem is not None and not isinstance(on_prem, Mapping))
    ):
        return None
    return offerings_priced(
        owner=owner,
        catalog=catalog,
        accelerator=accelerator,
        gpus_per_node=gpus_per_node,
        on_prem=on_prem,
        site=site,
    )


def _priced(
    request: Mapping[str, Any],
    catalog: CatalogSpecs,
    book: OfferingPrices,
    site: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], CatalogSpecs]:
    """The request with the book's owning figures in ``cost.on_prem`` (what the request gives wins) and the
    ``site`` in ``cost.site``, and the catalog with the accelerator's offerings at the book's prices (per
    instance-hour, as the catalog states them)."""
    cost = dict(request.get("cost") or {})
    if book.on_prem:
        cost["on_prem"] = book.on_prem
    for section, terms in book.sections.items():  # a network quote, a colocation basis: the request's win
        cost.setdefault(section, terms)
    if site:
        cost["site"] = dict(site)
    priced = {**request, **({"cost": cost} if cost else {})}
    offerings = {
        slug: dataclasses.replace(o, usd_per_hour=book.usd_per_instance_hour(o)) if slug in book.cloud else o
        for slug, o in catalog.offerings.items()
    }
    return priced, dataclasses.replace(catalog, offerings=offerings)


def _within_quota(
    result: serving.ServingResult, catalog: CatalogSpecs, book: OfferingPrices
) -> serving.ServingResult:
    """The estimate without the rent options above the book's quota (the nodes obtainable on that offering
    and pricing model): an option that cannot supply the instances the replicas need is not an option."""
    kept, over = [], []
    for option in result.costs:
        quota = book.capacity_nodes.get(option.offering, {}).get(option.pricing_model)
        offering = catalog.offerings.get(option.offering)
        nodes = option.billed_gpus / offering.gpu_count if offering is not None else 0
        if quota is not None and nodes > quota:
            over.append(f"{option.option} needs {nodes:g} instances, the quota is {quota}")
        else:
            kept.append(option)
    if not over:
        return result
    note = "; ".join(filter(None, [result.cost_note, "over the price book's quota: " + "; ".join(over)]))
    return dataclasses.replace(result, costs=tuple(kept), cost_note=note)


def serving_estimate_priced(
    *,
    request: Mapping[str, Any],
    owner: PriceOwner | None,
    catalog: CatalogSpecs | None = None,
    site: Mapping[str, Any] | None = None,
) -> PricedEstimate:
    """The estimate with its prices resolved through ``owner``'s price book (a team's, a design's owner's or
    the asker's own; None: the catalog's): the server quote, power and colocation into the owning option, the
    book's rates and discounts into the accelerator's offerings, its quota on what they can supply. At a
    ``site`` (serving_site), the owning option is priced at its power price, PUE and colocation, which win
    over the book's, as a design's site does."""
    catalog = catalog or selectors.engine_catalog()
    book = _book(request, catalog, owner, site)
    if book is None:
        return PricedEstimate(
            serving_estimate(request=request, catalog=catalog), dict(request), catalog, [], []
        )
    priced, priced_catalog = _priced(request, catalog, book, site)
    result = _within_quota(serving_estimate(request=priced, catalog=priced_catalog), catalog, book)
    return PricedEstimate(result, priced, priced_catalog, book.rows, book.findings)


def serving_estimate_with_deploy(
    *, request: Mapping[str, Any], owner: PriceOwner | None = None, site: Mapping[str, Any] | None = None
) -> tuple[PricedEstimate, dict[str, str]]:
    """The estimate and its deploy texts from one catalog snapshot: rows changed between two reads (an
    accelerator renamed or deleted) must not make one answer of two catalogs."""
    estimate = serving_estimate_priced(request=request, owner=owner, site=site)
    return estimate, serving_deploy(request=request, result=estimate.result, catalog=estimate.catalog)


def serving_deploy(
    *, request: Mapping[str, Any], result: serving.ServingResult, catalog: CatalogSpecs | None = None
) -> dict[str, str]:
    """The estimate's chosen configuration as a ``vllm serve`` command line and a Kubernetes manifest, read
    with the catalog the estimate used (``catalog``; by default the database's)."""
    inp, _ = serving.parse_request(request, accelerators=(catalog or selectors.engine_catalog()).accelerators)
    return deploy_texts(dict(request), inp, result)
