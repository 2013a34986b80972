"""A site a design is placed in (issue #35, Sites): its power and colocation prices, PUE by cooling type, rack
power limit, cooling, and the MW it has now and later; and the check of an owned cluster against it (how many
racks, whether a rack-scale system fits a rack at all, liquid cooling, IT load against the site's MW).

``parse_site_json`` checks a site object field by field (the spec's rules,
clusterdesigner.engine.design.spec), so an error names the field's path (``spec.site.pue.air``);
``site_from_json`` types a clean one; ``site_fit`` gives the numbers
clusterdesigner.engine.cost.findings.site_findings turns into findings.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from clusterdesigner.engine.core import bounds
from clusterdesigner.engine.core.spec_rules import NON_FIELD, Rule, SpecError, parse_object

COOLING_TYPES = ("air", "rear_door", "direct_liquid")
# The kW colocation bills (the cost engine's colocation.basis): the contract's kW, or the average kW drawn.
COLOCATION_BASES = ("contracted_kw", "drawn_kw")
# ISO month or day: "2027-06" or "2027-06-15".
_DATE = re.compile(r"^\d{4}-(0[1-9]|1[0-2])(-(0[1-9]|[12]\d|3[01]))?$")

# Parts sold as one rack-scale system whose NVLink domain is the rack, and that need direct liquid cooling:
# the rack is placed as one unit of ``gpus`` GPUs. Sources (secondary; NVIDIA's product pages call both
# "liquid-cooled, rack-scale"): GB200 NVL72 "consumes 120 kilowatts ... mandatory liquid cooling systems"
# (introl.com 'GB200 NVL72 Deployment: Managing 72 GPUs in Liquid-Cooled Configurations'); GB300 NVL72 "72
# NVIDIA Blackwell Ultra GPUs and 36 NVIDIA Grace CPUs into a single liquid-cooled rack" (aiwiki.ai 'NVIDIA
# GB300 NVL72'), "NVIDIA specifies liquid cooling for the Oberon rack" (epium.com, citing Morgan Stanley);
# Vera Rubin NVL144 (72 packages) "~200 kW is too much for air" (regantih.github.io reports-lab NVL72 drills).
RACK_SCALE_SOURCE = (
    "liquid-cooled rack-scale NVL72 system: introl.com 'GB200 NVL72 Deployment' (120 kW, mandatory liquid"
    " cooling); aiwiki.ai 'NVIDIA GB300 NVL72' (single liquid-cooled rack) — secondary"
)


@dataclass(frozen=True)
class RackScalePart:
    """An accelerator sold as a rack-scale system: GPUs in one rack, and the cooling it needs."""

    gpus_per_rack: int
    cooling: str
    source: str


RACK_SCALE: Mapping[str, RackScalePart] = {
    "gb200": RackScalePart(72, "direct_liquid", RACK_SCALE_SOURCE),
    "gb300": RackScalePart(72, "direct_liquid", RACK_SCALE_SOURCE),
    "vera-rubin": RackScalePart(
        72, "direct_liquid", "Vera Rubin NVL144 rack, ~190-230 kW, liquid only (reports-lab NVL72 drills)"
    ),
}


def _money(path: str) -> Rule:
    """A price the cost engine also reads (its bounds)."""
    bound = bounds.COST[path]
    return Rule("float", 0, bound.high, required=True)


PUE: Mapping[str, Rule] = {kind: Rule("float", 1, bounds.COST["on_prem.pue"].high) for kind in COOLING_TYPES}
POWER_STEP: Mapping[str, Rule] = {
    "date": Rule("text", max_length=10, required=True),
    "mw": Rule("float", 0, 100_000, required=True),
}
SITE: Mapping[str, Rule] = {
    # A saved site's id (the app fills in its fields); kept in the spec to say where they came from.
    "id": Rule("int", 1, 2**63 - 1),
    "name": Rule("text", max_length=120, required=True),
    "region": Rule("text", max_length=120),
    "power_usd_per_kwh": _money("on_prem.usd_per_kwh"),
    "colocation_usd_per_kw_month": _money("on_prem.colo_usd_per_kw_month"),
    "colocation_basis": Rule("choice", choices=COLOCATION_BASES, default="contracted_kw"),
    # All-in: the colocation price includes the power (no separate energy bill).
    "colocation_all_in": Rule("bool", default=False),
    "pue": Rule("object", required=True),
    "max_kw_per_rack": Rule("float", 0.1, 10_000, required=True),
    "cooling": Rule("list", items="choice", required=True),
    "power_now_mw": Rule("float", 0, 100_000, required=True),
    # Total MW available from each date on (a later step replaces the earlier figure, it does not add to it).
    "power_later": Rule("list", default=[]),
    "rack_lead_time_months": Rule("float", 0, 120),
    # Capex per rack (the rack, its PDUs and cooling hardware), counted once per rack the design fills.
    "capex_usd_per_rack": Rule("float", 0, 1e8),
    # Power distribution and cooling capex per MW of IT at full load.
    "capex_usd_per_mw": Rule("float", 0, bounds.COST["on_prem.facility_capex_usd_per_mw"].high),
    # When the design is to run at the site (ISO month or day): the MW check reads the power at that date.
    "planned_date": Rule("text", max_length=10),
}


def _cooling(value: list[Any]) -> list[str]:
    errors = {
        str(i): [f'"{v}" is not a valid choice.'] for i, v in enumerate(value) if v not in COOLING_TYPES
    }
    if errors:
        raise SpecError(errors, prefix="")
    if not value:
        raise SpecError({NON_FIELD: ["Ensure this field has at least 1 elements."]}, prefix="")
    return list(dict.fromkeys(value))


def _date(value: str) -> str:
    if not _DATE.match(value):
        raise SpecError({NON_FIELD: ["must be a date: YYYY-MM or YYYY-MM-DD"]}, prefix="")
    return value


def _power_later(value: list[Any]) -> list[dict[str, Any]]:
    clean, errors = [], {}
    for index, item in enumerate(value):
        try:
            clean.append(parse_object(item, POWER_STEP, {"date": _date}))
        except SpecError as exc:
            errors[str(index)] = exc.errors
    if errors:
        raise SpecError(errors, prefix="")
    return sorted(clean, key=lambda step: _day(step["date"]))


def _day(date: str) -> str:
    """An ISO month as its first day, so months and days compare."""
    return date if len(date) == 10 else f"{date}-01"


def parse_site_json(data: Any, *, prefix: str = "") -> dict[str, Any]:
    """A site object checked (types, known keys, ranges, a PUE for every cooling type the site offers), its
    ``power_later`` steps sorted by date. SpecError names each refused field under ``prefix``."""
    try:
        nested: dict[str, Callable[[Any], Any]] = {
            "cooling": _cooling,
            "power_later": _power_later,
            "planned_date": _date,
            "pue": lambda v: parse_object(v, PUE),
        }
        clean = parse_object(data, SITE, nested)
        missing = [kind for kind in clean["cooling"] if kind not in clean["pue"]]
        if missing:
            raise SpecError(
                {"pue": {k: [f"give the PUE of the site's {k} cooling"] for k in missing}}, prefix=""
            )
    except SpecError as exc:
        raise SpecError(exc.errors, prefix=prefix) from exc
    return clean


@dataclass(frozen=True)
class PowerStep:
    date: str
    mw: float


@dataclass(frozen=True)
class Site:
    """A site (see SITE for each field's meaning and unit)."""

    name: str
    power_usd_per_kwh: float
    colocation_usd_per_kw_month: float
    colocation_basis: str
    colocation_all_in: bool
    pue: Mapping[str, float]
    max_kw_per_rack: float
    cooling: tuple[str, ...]
    power_now_mw: float
    power_later: tuple[PowerStep, ...] = ()
    region: str = ""
    rack_lead_time_months: float | None = None
    capex_usd_per_rack: float | None = None
    capex_usd_per_mw: float | None = None
    planned_date: str | None = None
    id: int | None = None

    def mw_at(self, date: str | None) -> float:
        """The MW available at ``date`` (the latest step dated on or before it); now without a date."""
        if date is None:
            return self.power_now_mw
        steps = [s for s in self.power_later if _day(s.date) <= _day(date)]
        return steps[-1].mw if steps else self.power_now_mw

    def first_date_with(self, mw: float) -> str | None:
        """The first later date from which the site has at least ``mw``; None if none does."""
        return next((s.date for s in self.power_later if s.mw >= mw), None)


def site_from_json(clean: Mapping[str, Any]) -> Site:
    """A site from :func:`parse_site_json`'s clean object."""
    return Site(
        **{k: v for k, v in clean.items() if k not in ("pue", "cooling", "power_later")},
        pue={k: float(v) for k, v in clean["pue"].items()},
        cooling=tuple(clean["cooling"]),
        power_later=tuple(PowerStep(str(s["date"]), float(s["mw"])) for s in clean.get("power_later", ())),
    )


def parse_site(data: Any, *, prefix: str = "site") -> Site:
    """A raw site object as a Site; SpecError names the field under ``prefix``."""
    return site_from_json(parse_site_json(data, prefix=prefix))


def cooling_used(site: Site, accelerator: str) -> str:
    """The cooling the design uses: what its part needs (direct liquid for a rack-scale NVL72), else the
    site's least demanding cooling on offer (air, then rear-door, then direct liquid)."""
    part = RACK_SCALE.get(accelerator)
    if part is not None:
        return part.cooling
    return next(kind for kind in COOLING_TYPES if kind in site.cooling)


@dataclass(frozen=True)
class RackPlan:
    """How the nodes go into the site's racks. ``unit_gpus`` is one rack-scale system's GPUs (None: the node
    is the unit and racks hold as many nodes as their kW allow); ``rack_kw`` is one full rack's draw."""

    racks: int
    nodes_per_rack: int  # 0: one node (or one rack-scale system) alone exceeds the rack's kW
    rack_kw: float
    node_power_kw: float
    unit_gpus: int | None
    fits: bool


def rack_plan(
    *, nodes: int, gpus_per_node: int, node_power_kw: float, max_kw_per_rack: float, accelerator: str
) -> RackPlan:
    """Racks = ⌈nodes / nodes per rack⌉. A rack-scale part (RACK_SCALE) fills one rack with its GPUs:
    nodes per rack = GPUs per rack ÷ GPUs per node (a 72-GPU node is the rack itself), rack kW = that × node
    kW, and it fits only if rack kW ≤ the limit (it cannot be split). Any other node: nodes per rack =
    ⌊limit ÷ node kW⌋, 0 when one node exceeds the limit. Node kW is the cost engine's (catalog server type,
    else GPUs × TDP × the DGX H100 ratio)."""
    part = RACK_SCALE.get(accelerator)
    if part is not None:
        per_rack = max(1, part.gpus_per_rack // gpus_per_node)
        rack_kw = per_rack * node_power_kw
        fits = rack_kw <= max_kw_per_rack * (1 + 1e-12)
        return RackPlan(
            math.ceil(nodes / per_rack) if fits else 0, per_rack if fits else 0, rack_kw, node_power_kw,
            part.gpus_per_rack, fits,
        )  # fmt: skip
    per_rack = math.floor(max_kw_per_rack / node_power_kw * (1 + 1e-12))
    if per_rack < 1:
        return RackPlan(0, 0, node_power_kw, node_power_kw, None, False)
    return RackPlan(
        math.ceil(nodes / per_rack), per_rack, per_rack * node_power_kw, node_power_kw, None, True
    )


@dataclass(frozen=True)
class SiteFit:
    """What site_findings reads: the site, the cooling used and needed, the rack plan and the IT load."""

    site: Site
    accelerator: str
    accelerator_name: str
    cooling: str
    cooling_required: str | None
    plan: RackPlan
    it_load_mw: float
    node_power_source: str


def input_source(site: Site, cooling: str, path: str = "") -> str:
    """Where a cost input the site sets comes from, as every consumer's figure says it: "site <name> (saved
    site N)", with the cooling used for the PUE."""
    source = f"site {site.name}" + (f" (saved site {site.id})" if site.id else "")
    return f"{source}, {cooling.replace('_', ' ')} cooling" if path == "on_prem.pue" else source


def cost_inputs(site: Site, cooling: str) -> list[tuple[str, Any, str]]:
    """The cost engine's inputs the site sets: (request path, value, unit). The PUE is the cooling used's
    (none when the site does not offer it: the finding says so, and the engine's default stays)."""
    out: list[tuple[str, Any, str]] = [
        ("on_prem.usd_per_kwh", site.power_usd_per_kwh, "USD/kWh"),
        ("on_prem.colo_usd_per_kw_month", site.colocation_usd_per_kw_month, "USD/kW-month"),
        ("colocation.pricing", "all_in" if site.colocation_all_in else "space_only", ""),
        ("colocation.basis", site.colocation_basis, ""),
    ]
    if cooling in site.pue:
        out.append(("on_prem.pue", site.pue[cooling], "ratio"))
    if site.capex_usd_per_mw is not None:
        out.append(("on_prem.facility_capex_usd_per_mw", site.capex_usd_per_mw, "USD/MW IT"))
    return out
