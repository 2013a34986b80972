"""The cost engine's inputs, read once from what the user sent, each part knowing where it sits there.

A :class:`CostInputs` holds the cost request's top-level entries (a section such as ``on_prem`` or
``cashflow``, or one figure such as ``horizon_years``), each a :class:`Section` with its path in what the user
sent: a design's ``on_prem`` is ``spec.costs.on_prem``, its cloud choice ``spec.costs.cloud.1``; a bare
cost request's ``on_prem`` is ``on_prem`` (:meth:`CostInputs.read`, ``at=""``). Whoever builds the inputs
places each value and states its path in the same line (clusterdesigner.engine.design.spec.cost_inputs), so
the cost engine's reader (cost_request.resolve) names an error by the user's path as it raises it: nothing
is renamed afterwards.

Everything here is what does not depend on the training result; the cost engine takes the inputs as they
are with that result (cost.tco). :meth:`CostInputs.with_nodes` is the same inputs on another node count
(the goals' larger clusters), :meth:`CostInputs.with_section` one entry added or replaced (an RL run's days).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from clusterdesigner.engine.core.errors import InputError, under

MISSING: Any = object()


@dataclass(frozen=True)
class Section:
    """One top-level entry of the cost request and where it sits in what the user sent: ``value`` (None: not
    given, yet named at ``at`` should the engine ask for it); ``at``, its path there; ``fields``, the path of
    a field placed in it from elsewhere (a design's shared cloud settings, a rollout pool's own node count, a
    sweep's swept lists), by the field's name in the section."""

    value: Any
    at: str
    fields: Mapping[str, str] = field(default_factory=dict)

    def where(self, rest: str) -> str:
        """The user's path of ``rest`` (a dotted path inside this entry; "" the entry itself)."""
        head, _, tail = rest.partition(".")
        if head in self.fields:
            return under(self.fields[head], tail)
        return under(self.at, rest)


@dataclass(frozen=True)
class CostInputs:
    """A cost request read: its entries by name (``cluster``, ``on_prem``, ``cloud``, ``horizon_years``...),
    each with its path in what the user sent; ``at``, the path of the whole (an entry not given is named
    under it)."""

    sections: Mapping[str, Section]
    at: str = ""

    @classmethod
    def read(cls, request: Any, *, at: str = "") -> CostInputs:
        """A cost request as sent (the tco API's, a command's file): every entry at its own name under
        ``at``. InputError when the request is not a JSON object."""
        if not isinstance(request, Mapping):
            raise InputError("the request must be a JSON object", field=at)
        return cls({str(k): Section(v, under(at, str(k))) for k, v in request.items()}, at=at)

    def where(self, path: str) -> str:
        """The user's path of request field ``path`` (a design's ``cloud.offering``:
        ``spec.costs.cloud.1.offering``)."""
        head, _, rest = path.partition(".")
        section = self.sections.get(head)
        return under(self.at, path) if section is None else section.where(rest)

    def find(self, path: str) -> Any:
        """The value of request field ``path``, or :data:`MISSING` (absent or null); InputError naming the
        user's path of the field's parent when the path goes through a part that is not an object."""
        head, _, rest = path.partition(".")
        section = self.sections.get(head)
        if section is None or section.value is None:
            return MISSING
        node = section.value
        for part in rest.split(".") if rest else ():
            if not isinstance(node, Mapping):
                raise InputError("must be an object", field=self.where(path.rsplit(".", 1)[0]))
            if node.get(part) is None:
                return MISSING
            node = node[part]
        return MISSING if node is None else node

    def value(self, name: str) -> Any:
        """Entry ``name``'s value (None when not given)."""
        section = self.sections.get(name)
        return None if section is None else section.value

    @property
    def offering(self) -> str | None:
        """The cloud offering these inputs compare owning with (None: none named)."""
        cloud = self.value("cloud")
        slug = cloud.get("offering") if isinstance(cloud, Mapping) else None
        return slug if isinstance(slug, str) and slug else None

    @property
    def key(self) -> str:
        """The key of these inputs' result in a design's costs: the offering, else ``on_prem_only``."""
        return self.offering or "on_prem_only"

    def request(self) -> dict[str, Any]:
        """The inputs as the cost engine's JSON request (docs/cost-engine.md); an entry not given (None) left
        out."""
        return {name: section.value for name, section in self.sections.items() if section.value is not None}

    def with_section(self, name: str, value: Any, *, at: str) -> CostInputs:
        """These inputs with entry ``name`` set to ``value``, at the user's path ``at``."""
        return replace(self, sections={**self.sections, name: Section(value, at)})

    def with_nodes(self, nodes: int) -> CostInputs:
        """These inputs on ``nodes`` nodes (the cluster's node count replaced, every path kept)."""
        cluster = self.sections["cluster"]
        moved = replace(cluster, value={**cluster.value, "nodes": nodes})
        return replace(self, sections={**self.sections, "cluster": moved})
