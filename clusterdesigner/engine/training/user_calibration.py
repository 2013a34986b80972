"""A user's or a team's own calibration (issue 40): per-regime efficiency factors fitted on the holder's
measured runs, with error bands from the holder's own out-of-fold residuals, applied to the training estimates
of the holder's designs when the holder switches it on.

Estimator. A measured run i has the engine's step time ``s_i`` (the same training request a design builds,
evaluated by ``training.estimate``) and the measured step time ``m_i``; its ratio is r_i = m_i / s_i. The
factor of a regime key K is the geometric mean of the ratios of the runs under K:

    f_K = exp( mean_i ln r_i ),  i over the runs counted under K,

fitted for every key with at least ``MIN_RUNS`` runs; a run counts under its regime and each coarser key
(``error_band.band_keys``), as the published bands' rows do. Never a factor per row: a key with fewer runs
has no factor of its own and a design takes the first key of its regime that has one.

Band. Leave one out: run i is predicted with the factor fitted on the other runs of K,
f_K(−i) = exp(mean_{j≠i} ln r_j), and its residual on the rate, as the published bands state theirs
(predicted / measured − 1, engine/training/error_band.py), is e_i = r_i / f_K(−i) − 1. The band's edges are
the 10th and 90th percentiles of those residuals (linear interpolation between order statistics), so the band
comes from runs the factor was not fitted on.

Applied to an estimate: step time (every part) × f, tokens/s, TFLOP/s, MFU and HFU ÷ f, days × f; the band
is the calibrated tokens/s divided by (1 + p90) … (1 + p10), and its days the tokens over those rates.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.core.json_object import JsonObject, omit
from clusterdesigner.engine.training.error_band import band_keys

MIN_RUNS = 3
RATE_KEYS = ("tokens_per_second", "model_tflops_per_gpu", "hardware_tflops_per_gpu", "mfu", "hfu")
PUBLISHED = "published calibration (engine/training/error_band_table.py)"


@dataclass(frozen=True, kw_only=True)
class MeasuredPoint:
    """One measured run as the fit reads it: its regime (``error_band.regime_key``), the engine's step time
    and the measured one, in seconds."""

    regime: str
    estimated_step_s: float
    measured_step_s: float

    @property
    def ratio(self) -> float:
        return self.measured_step_s / self.estimated_step_s


@dataclass(frozen=True, kw_only=True)
class RegimeFactor(JsonObject):
    """The factor of one regime key, the runs it rests on, and the band's edges (p10, p90 of the
    leave-one-out residuals on the rate)."""

    key: str
    factor: float
    runs: int
    p10: float
    p90: float


@dataclass(frozen=True, kw_only=True)
class UserCalibration(JsonObject):
    """A user's fitted calibration: one factor per regime key with at least MIN_RUNS runs."""

    factors: tuple[RegimeFactor, ...] = ()

    def factor_for(self, regime: str) -> RegimeFactor | None:
        """The factor of ``regime`` or of its first coarser key that has one (``band_keys`` order)."""
        by_key = {f.key: f for f in self.factors}
        return next((by_key[k] for k in band_keys(regime) if k in by_key), None)


@dataclass(frozen=True, kw_only=True)
class CalibrationState(JsonObject):
    """A holder's switch and, when on, the calibration fitted on the holder's runs (what an evaluation of the
    holder's designs depends on, and is keyed by). The holder is the design's owner: a team for a team's
    design (``scope`` "team"), its maker for a personal one ("personal"); ``holder`` names it as the
    statement says it (“team Training infra”, “alice”)."""

    enabled: bool
    calibration: UserCalibration | None = omit()
    scope: str | None = omit()
    holder: str | None = omit()

    @property
    def label(self) -> str:
        return self.holder or "the design's owner"


def holder_label(*, scope: str, name: str) -> str:
    """How an estimate's calibration statement names the holder (``CalibrationState.holder``): a team's by
    “team ” and its name (“team Training infra”), a user's by their name (“alice”)."""
    return f"team {name}" if scope == "team" else name


@dataclass(frozen=True, kw_only=True)
class CalibrationStatement(JsonObject):
    """What an estimate says about its owner's calibration: whose it is (``scope`` "team" or "personal" and
    ``holder``, the team's or the user's name), applied or not (and why not), the factor and the key it was
    fitted for, the runs behind it, and where the band comes from."""

    applied: bool
    reason: str
    band_source: str
    scope: str | None = omit()
    holder: str | None = omit()
    factor: float | None = omit()
    regime: str | None = omit()
    runs: int | None = omit()


def geometric_mean(values: Sequence[float]) -> float:
    """exp(mean(ln v)); an empty or non-positive input is refused."""
    if not values or any(v <= 0 or not math.isfinite(v) for v in values):
        raise InputError("a factor needs at least one positive ratio", field="")
    return math.exp(sum(math.log(v) for v in values) / len(values))


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0–100) with linear interpolation between order statistics (numpy's default)."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def loo_residuals(ratios: Sequence[float]) -> list[float]:
    """e_i = r_i / f(−i) − 1, f(−i) the geometric mean of the other ratios (needs two or more)."""
    logs = [math.log(r) for r in ratios]
    total, n = sum(logs), len(logs)
    return [r / math.exp((total - log) / (n - 1)) - 1.0 for r, log in zip(ratios, logs, strict=True)]


def regime_factor(key: str, ratios: Sequence[float]) -> RegimeFactor:
    """The factor of ``key`` and its band from the leave-one-out residuals of ``ratios``."""
    residuals = loo_residuals(ratios)
    return RegimeFactor(
        key=key,
        factor=geometric_mean(ratios),
        runs=len(ratios),
        p10=percentile(residuals, 10),
        p90=percentile(residuals, 90),
    )


def fit(points: Sequence[MeasuredPoint]) -> UserCalibration:
    """A factor for every regime key (a run's regime and each coarser key) with at least MIN_RUNS runs."""
    by_key: dict[str, list[float]] = {}
    for point in points:
        for key in band_keys(point.regime):
            by_key.setdefault(key, []).append(point.ratio)
    factors = [regime_factor(key, ratios) for key, ratios in by_key.items() if len(ratios) >= MIN_RUNS]
    return UserCalibration(factors=tuple(sorted(factors, key=lambda f: f.key)))


def _scaled_row(row: Mapping[str, Any], found: RegimeFactor, tokens: float, label: str) -> dict[str, Any]:
    """One layout's figures calibrated by ``found`` (the module docstring's rules)."""
    f = found.factor
    out = dict(row)
    out["step_time_s"] = {k: (None if v is None else v * f) for k, v in row["step_time_s"].items()}
    for key in RATE_KEYS:
        out[key] = row[key] / f
    out["time_to_train_days"] = row["time_to_train_days"] * f
    band = row.get("error_band")
    if isinstance(band, Mapping):
        low, high = out["tokens_per_second"] / (1 + found.p90), out["tokens_per_second"] / (1 + found.p10)
        out["error_band"] = {
            **band,
            "basis": f"measured runs of {label}: {found.key}",
            "rows": found.runs,
            "tokens_per_second_low": low,
            "tokens_per_second_high": high,
            "days_low": tokens / high / 86400.0,
            "days_high": tokens / low / 86400.0,
        }
    return out


def calibrate(
    training: Mapping[str, Any], state: CalibrationState
) -> tuple[Mapping[str, Any], CalibrationStatement]:
    """The training estimate (its JSON) with the holder's factor for its regime applied, and the statement.
    Switched off: the estimate as given, object for object."""
    calibration = state.calibration or UserCalibration()
    if not state.enabled:
        return training, CalibrationStatement(
            applied=False,
            reason=f"the calibration of {state.label} is switched off",
            band_source=PUBLISHED,
            scope=state.scope,
            holder=state.holder,
        )
    band = training.get("error_band")
    regime = band.get("regime") if isinstance(band, Mapping) else None
    found = calibration.factor_for(str(regime)) if regime else None
    if found is None:
        return training, CalibrationStatement(
            applied=False,
            reason=f"no regime of {state.label} with {MIN_RUNS} or more measured runs covers {regime}",
            band_source=PUBLISHED,
            scope=state.scope,
            holder=state.holder,
        )
    tokens = float(training["summary"]["training"]["tokens"])
    out = _scaled_row(training, found, tokens, state.label)
    if "candidates" in training:
        out["candidates"] = [_scaled_row(c, found, tokens, state.label) for c in training["candidates"]]
    return out, CalibrationStatement(
        applied=True,
        reason=f"the factor of {state.label} for {found.key}",
        band_source=(
            f"leave-one-out residuals of {found.runs} measured runs of {state.label} under {found.key}"
        ),
        factor=found.factor,
        regime=found.key,
        runs=found.runs,
        scope=state.scope,
        holder=state.holder,
    )
