"""Print the serving engine's calibration against measured serving results, then the error figures.

    .venv/bin/python bench/serving_calibration.py

Rows: tests/engine/data/serving_runs.csv (MLPerf Inference v4.1 closed results read from their
mlperf_log_summary.txt files, and vLLM posts that state their settings). Efficiency constants are fitted
per serving stack on the rows marked ``fit`` (tests/engine/serving_calibration_cases.py says how each
scenario is predicted); the targets (median |error| ≤ 15 %, p90 ≤ 30 %, pairwise direction ≥ 90 %) are
judged on the ``check`` rows and, separately, on the ``blind`` rows; the ``fit`` rows and the ``fresh`` rows
(seen before the last model change) are printed apart and are not target sets. Last, the sensitivity of the
MLPerf rows to their UNVERIFIED mean input lengths.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "engine")]

import numpy as np  # noqa: E402
import serving_calibration_cases as cal  # noqa: E402

from clusterdesigner.engine.serving import serving  # noqa: E402

PROTOCOL = (
    "protocol: constants are fitted only on the 'fit' rows; the 'check' rows were held out of the fit but"
    " were seen while the model was changed, so they are not a blind test; the 'fresh' rows were collected"
    " after the first model change was committed (read before the second, Poisson arrivals); the 'blind'"
    " rows were collected after the last model change was committed and were never seen by it. The 28"
    " check rows of ROCm/vllm's README (vLLM v0.10.0) were added with their fit/check split declared before"
    " the model ran on them, but the collective-latency fit was chosen after seeing their errors, so they"
    " are checks too. Issue #37 (w8) added 218 rows, their split declared before any fit: TensorRT-LLM's v1.0"
    " perf-overview tables (trtllm-bench, H100/H200 FP8, B200/GB200 FP4, dense and MoE) and the throughput"
    " table of ROCm/vllm's v0.10.0 README; in each regime (stack, accelerator, precision, dense/MoE,"
    " scenario) every third row is check, and the README rows are fit since the regime's four AMD-page rows"
    " already were check. The 110 MoE rows of the perf overview were then moved out of fit and check"
    " after their errors were seen (their published command runs attention data-parallel with expert"
    " parallelism, which the engine could not express); issue #37 (w7) made that layout expressible"
    " (attention_dp) and brought them back with the split the rule had declared (75 fit, 35 check); their"
    " constants (moe_compute_scale and, since issue #37 h8 padded the routed experts' decode rows to the"
    " grouped GEMM's 128-row tile and added the busiest expert-parallel rank, moe_tile_overhead_k) are"
    " fitted last on their fit rows, the others held; h8 chose those terms after seeing every MoE row's"
    " error, fit and check. vllm-rocm-2025's"
    " host time of a single-step loop (host_sequence_us) is fitted second on that stack's fit rows; its form"
    " was chosen knowing the blind rows' errors at batch 32-128, so those rows are no longer blind."
)


SPLITS = (
    ("fit", "FIT rows (the constants were fitted on these: not a test)"),
    ("check", "CHECK rows (held out of every fit, but seen while the model was changed: not blind)"),
    ("fresh", "FRESH rows (read after the first model change; seen before the Poisson change: not blind)"),
    (
        "blind",
        "BLIND rows (read after a model change was committed; no longer blind since issue #37's host time,"
        " whose form was chosen knowing their errors though its constant was fitted on fit rows only)",
    ),
)


def _print_summary(chosen: list[cal.Case], *, judged: bool) -> None:
    """One split's figures; ``judged``: the issue's targets apply to it (check and blind rows)."""
    if not chosen:
        print("  none")
        return
    s = cal.summary(chosen)
    accelerators = sorted({c.row["accelerator"] for c in chosen})
    met = s["median_abs_error"] <= 0.12 and s["p90_abs_error"] <= 0.30
    pairs = (
        f"{s['pairs_right']:.0f}/{s['pairs']:.0f}"
        if s["pairs"]
        else "no pairs (no setting on two accelerators)"
    )
    verdict = "targets MET" if met else "targets NOT MET"
    if not judged:
        verdict = f"not a target set ({verdict.lower()})"
    print(
        f"  {s['compared']:.0f} of {s['rows']:.0f} rows compared on {len(accelerators)} accelerators"
        f" ({', '.join(accelerators)}): median |error| {100 * s['median_abs_error']:.1f} %,"
        f" p90 {100 * s['p90_abs_error']:.1f} %, pairwise direction {pairs}; {verdict}"
    )


def _print_regimes(cases: list[cal.Case]) -> None:
    """Fit and check |error| per regime (stack, accelerator, weight precision, dense/MoE, scenario): median
    and p90 over the regime's rows of each split, with the count; '-' where a regime has no row of a split."""
    print("\nerror by regime: fit rows | check rows (n, median |error|, p90 |error|, signed median)")
    for key, items in cal.by_regime(cases).items():
        cells = []
        for split in ("fit", "check"):
            errs = np.array([c.error for c in items if c.row["split"] == split and c.error is not None])
            if not errs.size:
                cells.append(f"{'-':>27s}")
                continue
            a = np.abs(errs)
            cells.append(
                f"{errs.size:3d} {100 * np.median(a):5.1f} % {100 * np.percentile(a, 90):5.1f} %"
                f" {100 * np.median(errs):+6.1f} %"
            )
        print(f"  {' '.join(key):52s} {cells[0]} | {cells[1]}")


def _print_sensitivity(data: list[dict[str, str]]) -> None:
    """The MLPerf rows' mean input lengths (Llama 2 70B 294, Mixtral 145) are UNVERIFIED: their errors with
    the input length halved and doubled."""
    unverified = [r for r in data if "UNVERIFIED" in r["verification"]]
    print(
        f"\nsensitivity: {len(unverified)} MLPerf rows have an UNVERIFIED mean input length (Llama 2 70B 294,"
        " Mixtral 8x7B 145); their median / p90 |error| with it scaled, the fitted constants held:"
    )
    for scale in (0.5, 1.0, 2.0):
        chosen = [
            cal.Case(r, cal.predict(row, serving.STACKS[r["stack"]]))
            for r in unverified
            for row in [{**r, "input_tokens": str(round(int(r["input_tokens"]) * scale))}]
        ]
        s = cal.summary(chosen)
        print(
            f"  input × {scale:g}: median {100 * s['median_abs_error']:.1f} %,"
            f" p90 {100 * s['p90_abs_error']:.1f} % over {s['compared']:.0f} rows"
        )


def main() -> None:
    print(PROTOCOL)
    print()
    data = cal.rows()
    print("fitted efficiency per stack (on the 'fit' rows):")
    for stack in sorted(serving.STACKS):
        eff = cal.fit(data, stack)
        engine = serving.STACKS[stack]
        same = "matches serving.STACKS" if eff == engine else f"DIFFERS from serving.STACKS {engine}"
        print(
            f"  {stack:13s} bandwidth {eff.bandwidth_efficiency:.2f}  compute {eff.compute_efficiency:.2f}"
            f"  per-sequence step overhead {eff.sequence_overhead_us:.0f} µs"
            f"  collective latency {eff.collective_latency_us:.0f} µs  FP4 scale {eff.fp4_compute_scale:.2f}"
            f"  single-step host time {eff.host_sequence_us:.0f} µs  MoE scale {eff.moe_compute_scale:.2f}"
            f"  MoE tile overhead {eff.moe_tile_overhead_k:.0f}"
            f"  KV reserved {eff.kv_reserved_output_fraction:g} of the output"
            f"  shared prefill read {eff.prefill_shares_weight_read}  ({same})"
        )
    cases = cal.cases()
    print()
    print(
        f"{'row':30s} {'split':5s} {'acc':9s} {'gpus':>4s} {'scenario':11s}"
        f" {'measured':>9s} {'predicted':>9s} {'error':>7s}"
    )
    for c in cases:
        r = c.row
        err = "-" if c.error is None else f"{100 * c.error:+.1f}%"
        pred = "-" if c.predicted is None else f"{c.predicted:9.0f}"
        print(
            f"{r['row_id']:30s} {r['split']:5s} {r['accelerator']:9s} {r['gpus']:>4s} {r['scenario']:11s}"
            f" {c.measured:9.0f} {pred:>9s} {err:>7s}"
        )
    _print_regimes(cases)
    print("\nerror figures by split (targets: median |error| ≤ 12 %, p90 ≤ 30 %, pairwise direction ≥ 90 %):")
    for split, title in SPLITS:
        chosen = [c for c in cases if c.row["split"] == split]
        print(f"\n{title}")
        _print_summary(chosen, judged=split in ("check", "blind"))
        if split in ("fit", "check"):
            for name, adp in (("attention-DP MoE rows", True), ("the other rows", False)):
                part = [c for c in chosen if (c.row.get("attention_dp") == "1") is adp]
                print(f"  of which {name}:")
                _print_summary(part, judged=split == "check")
    print(
        "\nthe issue's targets are judged on the check rows and, separately, the blind rows (36); the"
        " blind rows share two accelerators and no setting across them, so they have no ranking pairs"
    )
    before = [
        c
        for c in cases
        if c.row["split"] == "check"
        and "added by w7" not in c.row["verification"]
        and "added by w8" not in c.row["verification"]
    ]
    print(
        "\n  of the check rows, the 22 held before the 28 ROCm/vllm README rows were added (those 28 share"
        " the source of the vllm-rocm-2025 fit rows, so the 50-row figure leans on one README):"
    )
    _print_summary(before, judged=True)
    _print_sensitivity(data)
    accelerators = sorted({r["accelerator"] for r in data})
    print(f"\n{len(data)} rows on {len(accelerators)} accelerators: {', '.join(accelerators)}")
    _print_latency()


# Without queueing (before issue #37 item 2) TTFT was one prefill plus one decode step; its p99 error on the
# same 10 check rows, for comparison: -68, -66, -77, -88, -84, -78, -77, -81, -91, -96 % (median -79.5 %).
def _print_latency() -> None:
    """TTFT and TPOT p50/p90/p99 of the MLPerf server rows (serving_latency_runs.csv) against the queueing
    model at the engine's own sizing point for the row, by split, with the per-stack first-token overhead
    fitted on the fit rows."""
    print("\nlatency percentiles under queueing (MLPerf server rows, ms: predicted / measured, error)")
    for stack in ("tensorrt-llm", "vllm-rocm"):
        fitted = cal.fit_first_token_overhead(stack)
        engine = serving.STACKS[stack].first_token_overhead_ms
        same = "the engine's value" if fitted == engine else f"ENGINE HAS {engine:g}"
        print(f"  {stack:13s} first-token overhead fitted on its fit rows: {fitted:g} ms ({same})")
    cases = cal.latency_cases()
    for c in cases:
        cells = (
            " ".join(
                f"{n} {c.predicted[n]:5.0f}/{c.measured[n]:<5.0f}({100 * (c.error(n) or 0):+4.0f}%)"
                for n in cal.LATENCY_FIELDS
            )
            if c.predicted
            else "no layout"
        )
        print(f"  {c.row['row_id']:28s} {c.split:5s} {cells}")
    groups = (
        ("p99 TTFT", ("ttft_p99",)),
        ("p99 TPOT", ("tpot_p99",)),
        ("TTFT p50/p90/p99", ("ttft_p50", "ttft_p90", "ttft_p99")),
        ("TPOT p50/p90/p99", ("tpot_p50", "tpot_p90", "tpot_p99")),
    )
    print("  error by split (target on check rows: p99 TTFT and p99 TPOT median |error| ≤ 25 %):")
    for split in ("fit", "check"):
        chosen = [c for c in cases if c.split == split]
        for title, names in groups:
            s = cal.latency_summary(chosen, names)
            print(
                f"    {split:5s} {title:17s} {s['points']:3.0f} points:"
                f" median {100 * s['median_abs_error']:5.1f} %, p90 {100 * s['p90_abs_error']:5.1f} %"
            )
    regimes = (("dense (Llama 2 70B)", "llama2-70b"), ("MoE (Mixtral 8x7B)", "mixtral-8x7b"))
    for title, model in regimes:
        chosen = [c for c in cases if c.split == "check" and c.row["model"] == model]
        s = cal.latency_summary(chosen, ("ttft_p99",))
        t = cal.latency_summary(chosen, ("tpot_p99",))
        print(
            f"    check {title:20s} p99 TTFT median {100 * s['median_abs_error']:5.1f} %,"
            f" p99 TPOT median {100 * t['median_abs_error']:5.1f} % ({len(chosen)} rows)"
        )


if __name__ == "__main__":
    # --latency: only the latency percentiles (seconds; the throughput part refits every stack, minutes)
    if "--latency" in sys.argv[1:]:
        _print_latency()
    else:
        main()
