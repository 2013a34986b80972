"""What the dashboard pages take in, read once into typed objects: the query strings of the design, editor
and compare pages (a value that does not parse is ignored, as if absent: a hand-edited link opens the page,
never a 500), and the parts of a design spec the editor fills its inputs from.

``Prefill`` is the new-design editor's query string both ways: ``Prefill.parse`` reads it and
``Prefill.query`` writes it (the sweep page links each point to a prefilled design with it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.http import QueryDict

from apps.designs.specs import PRICING_MODELS
from clusterdesigner.engine.design.analysis_result import SweepRow


def _text(query: QueryDict, key: str) -> str:
    """The last value of ``key`` ("" when absent), as ``QueryDict.get`` and ``query[key]`` read it."""
    return query.get(key) or ""


def query_int(raw: str) -> int | None:
    """A non-negative integer written in ASCII digits, else None (``"²".isdigit()`` holds, but int() refuses
    it: a check on isdigit alone would answer 500)."""
    return int(raw) if raw.isascii() and raw.isdigit() else None


def _float(text: str) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


def _layout(text: str) -> dict[str, Any] | None:
    """A sweep point's layout (JSON), without its expert parallelism (the design's model decides it)."""
    try:
        layout = json.loads(text) if text else None
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth: no prefill
        return None
    return {k: v for k, v in layout.items() if k != "ep"} if isinstance(layout, dict) else None


@dataclass(frozen=True)
class CompareRef:
    """One column of the compare page: a design (its current version) or one saved version of it, written
    ``12`` or ``12v3`` in ``?ids=`` (issue #36: up to 6 designs or versions)."""

    design_id: int
    version: int | None = None

    @property
    def key(self) -> str:
        """The column's key in the query string (``option-<key>``) and the page: ``12`` or ``12v3``."""
        return str(self.design_id) if self.version is None else f"{self.design_id}v{self.version}"

    @classmethod
    def parse(cls, raw: str) -> CompareRef | None:
        """``12`` → design 12; ``12v3`` → its version 3; anything else None (ignored, as if absent)."""
        head, sep, tail = raw.partition("v")
        design_id, version = query_int(head), query_int(tail) if sep else None
        if design_id is None or (sep and version is None):
            return None
        return cls(design_id, version)


@dataclass(frozen=True, kw_only=True)
class PageQuery:
    """The design and compare pages' query string: ``?version=`` (a design version's number), ``?frame=``
    (the ranking frame), ``?ids=1&ids=2`` or ``?ids=1,2v3,3`` (the designs or design versions compared, in
    order, once each) and ``?option-<key>=<option key>`` (the option a compared column shows)."""

    version: int | None = None
    frame: str | None = None
    refs: tuple[CompareRef, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, query: QueryDict) -> PageQuery:
        refs: list[CompareRef] = []
        for raw in query.getlist("ids"):
            for part in raw.split(","):
                ref = CompareRef.parse(part.strip())
                if ref is not None and ref not in refs:
                    refs.append(ref)
        return cls(
            version=query_int(_text(query, "version")),
            frame=_text(query, "frame") or None,
            refs=tuple(refs),
            options={r.key: _text(query, f"option-{r.key}") for r in refs if _text(query, f"option-{r.key}")},
        )

    @property
    def ids(self) -> tuple[int, ...]:
        """The designs compared (each once, in order), whichever of their versions a column shows."""
        return tuple(dict.fromkeys(r.design_id for r in self.refs))

    def option_for(self, key: str) -> str | None:
        """The option key asked for column ``key`` (None: the column's default option)."""
        return self.options.get(key)


@dataclass(frozen=True, kw_only=True)
class Prefill:
    """The new-design editor's query string: a design name, the cluster's accelerator and size, the model
    preset, the training tokens, a fixed layout and a cloud offering with its pricing models. Each value
    left out (or unreadable) leaves the design default."""

    name: str = ""
    accelerator: str = ""
    nodes: int | None = None
    gpus_per_node: int | None = None
    preset: str = ""
    tokens: float | int | None = None  # as given: a sweep's int tokens are written back without ".0"
    layout: Mapping[str, Any] | None = None
    offering: str = ""
    pricing: tuple[str, ...] = ()

    @classmethod
    def parse(cls, query: QueryDict) -> Prefill:
        return cls(
            name=_text(query, "name"),
            accelerator=_text(query, "accelerator"),
            nodes=query_int(_text(query, "nodes")),
            gpus_per_node=query_int(_text(query, "gpus_per_node")),
            preset=_text(query, "preset"),
            tokens=_float(_text(query, "tokens")),
            layout=_layout(_text(query, "layout")),
            offering=_text(query, "offering"),
            pricing=tuple(m for m in query.getlist("pricing") if m in PRICING_MODELS),
        )

    @classmethod
    def of_sweep_row(cls, row: SweepRow, *, models: Mapping[str, Any], params: Mapping[str, Any]) -> Prefill:
        """A sweep point as a design: its accelerator, nodes, layout and offering (with its pricing model,
        unless owning), the sweep's model preset (``models``: the snapshot's model specs by key) and
        training tokens (``params``: the sweep's)."""
        model = _section(models, row.model or "")
        offering = row.offering or ""
        return cls(
            name=f"{row.accelerator} × {row.nodes} nodes ({row.pricing_model})",
            accelerator=row.accelerator,
            nodes=row.nodes,
            preset=model.get("preset") or "",
            tokens=_section(params, "training").get("tokens") or None,
            layout=row.layout,
            offering=offering,
            pricing=(row.pricing_model,) if offering and row.pricing_model != "own" else (),
        )

    def query(self) -> list[tuple[str, str]]:
        """The query string's pairs, in the order the sweep page has always written them."""
        pairs = [("accelerator", self.accelerator)] if self.accelerator else []
        pairs += [("nodes", str(self.nodes))] if self.nodes is not None else []
        pairs += [("name", self.name)] if self.name else []
        pairs += [("preset", self.preset)] if self.preset else []
        pairs += [("tokens", str(self.tokens))] if self.tokens else []
        if self.layout:
            pairs.append(("layout", json.dumps(self.layout, separators=(",", ":"))))
        pairs += [("offering", self.offering)] if self.offering else []
        return pairs + [("pricing", m) for m in self.pricing]


def _section(spec: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = spec.get(name)
    return value if isinstance(value, Mapping) else {}


@dataclass(frozen=True, kw_only=True)
class EditorSpec:
    """The sections of a design spec (a stored one, or a new design's prefill) that the editor fills its
    inputs from; a section the spec leaves out is empty, so its inputs show the defaults."""

    costs: Mapping[str, Any]
    model: Mapping[str, Any]
    training: Mapping[str, Any]
    layout: Any  # "auto", or a fixed layout's fields

    @classmethod
    def of(cls, spec: Mapping[str, Any]) -> EditorSpec:
        workload = _section(spec, "workload")
        return cls(
            costs=_section(spec, "costs"),
            model=_section(workload, "model"),
            training=_section(workload, "training"),
            layout=spec["parallelism"] if "parallelism" in spec else None,
        )

    def cost_value(self, path: str) -> Any:
        """The value of ``spec.costs.<section>.<key>`` (``on_prem.pue``), None when the spec leaves it out."""
        section, _, key = path.partition(".")
        values = _section(self.costs, section)
        return values[key] if key in values else None

    @property
    def preset(self) -> Any:
        return self.model["preset"] if "preset" in self.model else ""

    @property
    def batch_seqs(self) -> Any:
        """A batch given in sequences only (the tokens field stays blank and says so), else None."""
        if "global_batch_tokens" in self.training or "global_batch_seqs" not in self.training:
            return None
        return self.training["global_batch_seqs"]
