"""Print the current training engine's error on measured runs outside its calibration set: the baseline.

    .venv/bin/python bench/calibration_frontier.py [--regime REGIME] [--gb200-gpus-per-node N]

Each row of tests/engine/data/runs_frontier.csv (NeMo performance summaries 24.03-25.09: H100, B200, GB200;
dense, MoE, FP8, long context, ≥ 1,024 GPUs) is predicted with its published layout and compared on
tokens/s per GPU where measured, else model TFLOP/s per GPU (tests/engine/frontier_cases.py says what is
assumed where a row is silent). error = predicted / measured − 1. No factor is fitted here: these are the
figures issue 19's targets will be measured against. DeepSeek-V3 (MLA, MTP, an explicit pipeline layout)
and Qwen3 (head_dim ≠ hidden/heads) rows are predicted; rows the engine cannot express (a published layout
that does not cover the GPUs) or rejects (EP beyond dp × cp, which needs expert tensor parallelism) are
listed with the reason. Last, issue 32's parts (GB300, B300, MI350X, Vera Rubin) and recipes (FP8 current
and blockwise, MXFP8, NVFP4; Muon): their measured rows as fit or check with their errors, or that there
are none.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "engine")]

import calibration_cases  # noqa: E402
from frontier_cases import (  # noqa: E402
    GPU_SLUGS,
    REGIMES,
    FrontierCase,
    accelerator_slug,
    all_cases,
    catalog_specs,
    load_rows,
    missing_memory_levers,
    percentile,
    predict,
    recipe_of,
    run_gpus,
    summary,
)

from clusterdesigner.engine.training.error_band import MEASURED_PARTS  # noqa: E402
from clusterdesigner.engine.training.precision import recipe_for  # noqa: E402


def _fmt(value: float | None, spec: str) -> str:
    return format(value, spec) if value is not None else "-"


def line(c: FrontierCase) -> str:
    r = c.row
    layout = (
        f"tp{r['tp'] or 1} pp{r['pp'] or 1} cp{r['cp'] or 1} ep{r['ep'] or 1} vp{r['vpp'] or 1} "
        f"mb{r['micro_batch']} gbs{r['global_batch_seqs']}"
    )
    err = c.error
    fits = "" if c.fits is None else ("fits" if c.fits else "OOM")
    return (
        f"{r['run_id']:18s} {r['model_name'][:16]:16s} {accelerator_slug(r['gpu_type']) or '?':8s} "
        f"{run_gpus(r):>5d} {int(r['seq_len']) // 1024:>5d}K {layout:38s} "
        f"{c.metric.split('/')[0][:9]:9s} {_fmt(c.measured, '9.1f'):>9s} "
        f"{_fmt(c.predicted, '9.1f'):>9s} {_fmt(err and 100 * err, '+6.1f'):>6s}% "
        f"{_fmt(c.predicted_mfu, '.3f'):>5s} {fits:4s} {r['regime']}"
    )


def _recipe_rows(cases: list[FrontierCase], gb200_gpus_per_node: int) -> None:
    """Rows run in a block-scaled recipe: their error as if entered as per-tensor fp8 and in their own
    recipe (how every row is estimated since issue 33 h6, frontier_cases.recipe_of), with their role (fit or
    check, calibration_cases.fit_run_ids). Nothing here is fitted."""
    rows = load_rows()
    fit = calibration_cases.fit_run_ids(rows)
    specs = catalog_specs()
    picked = [c for c in cases if not c.skip and recipe_of(c.row) in ("mxfp8", "fp8_blockwise", "nvfp4")]
    print(f"rows measured in a block-scaled recipe, as fp8 and in their own ({len(picked)}):")
    for c in picked:
        recipe = recipe_of(c.row)
        as_fp8 = predict(c.row, specs, gb200_gpus_per_node=gb200_gpus_per_node, precision="fp8")
        role = "fit" if c.row["run_id"] in fit else "check"
        as_entered = _fmt(as_fp8.error and 100 * as_fp8.error, "+6.1f")
        in_recipe = _fmt(c.error and 100 * c.error, "+6.1f")
        print(
            f"  {c.row['run_id']:22s} {role:5s} {recipe:13s} as fp8 {as_entered}%  as {recipe} {in_recipe}%"
        )
    print()


# Issue 32's parts (catalog slug, the gpu_type prefixes a measured row of it carries) and recipes.
PARTS_2026 = (
    ("gb300", ("GB300",)),
    ("b300", ("B300", "HGX B300", "DGX B300")),
    ("mi350x", ("MI350X",)),
    ("vera-rubin", ("Vera Rubin", "Rubin", "VR200")),
)
RECIPES_2026 = ("fp8_current", "fp8_blockwise", "mxfp8", "nvfp4")


def _role_cells(errors: dict[str, list[float]]) -> str:
    """'fit n=…, median |error| …; check n=…, …' for the errors of one part's or recipe's rows by role."""
    cells = []
    for role in ("fit", "check"):
        e = errors[role]
        median = f", median |error| {100 * statistics.median(abs(x) for x in e):.1f} %" if e else ""
        cells.append(f"{role} n={len(e)}{median}")
    return "; ".join(cells)


def _issue32_rows(
    cases: list[FrontierCase], gb200_gpus_per_node: int, *, runs: list[calibration_cases.Case]
) -> None:
    """Measured rows of issue 32's parts and recipes in runs.csv and runs_frontier.csv, as fit or check
    (calibration_cases.fit_run_ids) with their error (predicted / measured − 1, the row estimated in its
    own recipe); where there is none it says so, and that the estimate's band is then its family's widest
    (error_band.MEASURED_PARTS, precision.Recipe.measured). Nothing here is fitted."""
    frontier_fit = calibration_cases.fit_run_ids(load_rows())
    runs_fit = calibration_cases.fit_run_ids(calibration_cases.load_runs())
    specs = catalog_specs()
    print("issue 32's parts: measured rows (runs.csv + runs_frontier.csv), fit/check with their errors:")
    for slug, prefixes in PARTS_2026:
        errors: dict[str, list[float]] = {"fit": [], "check": []}
        rows = 0
        for c in cases:
            if c.row["gpu_type"].startswith(prefixes):
                rows += 1
                if c.error is not None:
                    errors["fit" if c.row["run_id"] in frontier_fit else "check"].append(c.error)
        for r in runs:
            if r.row["gpu_type"].startswith(prefixes):
                rows += 1
                if (e := r.tflops_error) is not None:
                    errors["fit" if r.row["run_id"] in runs_fit else "check"].append(e)
        band = "listed measured" if slug in MEASURED_PARTS else "widest band of its family"
        if rows:
            print(f"  {slug:11s} {rows} rows: {_role_cells(errors)} (error band: {band})")
        else:
            print(f"  {slug:11s} no measured run in either CSV: nothing to fit or check (error band: {band})")
    print("issue 32's recipes: rows measured in them, estimated in their own recipe, fit/check:")
    for recipe in RECIPES_2026:
        errors = {"fit": [], "check": []}
        picked = [c for c in cases if not c.skip and recipe_of(c.row) == recipe]
        for c in picked:
            own = predict(c.row, specs, gb200_gpus_per_node=gb200_gpus_per_node, precision=recipe)
            if own.error is not None:
                errors["fit" if c.row["run_id"] in frontier_fit else "check"].append(own.error)
        gpus = sorted({accelerator_slug(c.row["gpu_type"]) or c.row["gpu_type"] for c in picked})
        band = "measured" if recipe_for(recipe).measured else "widest band of its family"
        if picked:
            where = f"{len(picked)} rows on {', '.join(gpus)}"
            print(f"  {recipe:13s} {where}: {_role_cells(errors)} (band: {band})")
        else:
            print(f"  {recipe:13s} no measured run in either CSV: nothing to fit or check (band: {band})")
    print(
        "  muon          no measured run in either CSV (no row names its optimizer; all are Adam): its "
        "estimate takes the band of the run's recipe and part"
    )
    print()


def _stats_line(label: str, s: dict[str, float | int]) -> str:
    if not s["n"]:
        return f"  {label:22s} n=  0  (no comparable row)"
    return (
        f"  {label:22s} n={s['n']:3d}  median |error| {100 * s['median_abs_error']:5.1f} %  "
        f"p90 |error| {100 * s['p90_abs_error']:5.1f} %  median signed {100 * s['median_error']:+6.1f} %"
    )


REGIME_TARGET = 0.12  # issue 19: median |error| ≤ 12 % per regime on the rows not used for fitting
MIN_CHECK_ROWS = 3  # fewer check rows than this say nothing about a regime's median


def _split_cells(s: dict[str, float | int], width: int = 5) -> str:
    if not s["n"]:
        return f"{0:>{width}d} {'-':>7s} {'-':>7s}"
    return f"{s['n']:>{width}d} {100 * s['median_abs_error']:6.1f}% {100 * s['p90_abs_error']:6.1f}%"


def all_rows_errors(cases: list[FrontierCase], *, runs: list[calibration_cases.Case]) -> list[float]:
    """|error| of every compared row of both CSVs (runs.csv on TFLOP/s, the frontier rows as in the table);
    ``runs`` is calibration_cases.all_cases(), computed once by the caller (it estimates all of runs.csv)."""
    calibration = [abs(e) for c in runs if (e := c.tflops_error) is not None]
    return calibration + [abs(c.error) for c in cases if c.error is not None]


def main(
    argv: list[str] | None = None,
    *,
    cases: list[FrontierCase] | None = None,
    runs: list[calibration_cases.Case] | None = None,
) -> None:
    """Print the report for the command line ``argv`` (None: sys.argv). ``cases`` and ``runs``, when a
    caller has them (all_cases() at the same --gb200-gpus-per-node, calibration_cases.all_cases(): the
    test module estimates both once), are read instead of estimating every row again; neither is changed."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--regime", choices=REGIMES, help="only rows of this regime in the table")
    parser.add_argument(
        "--gb200-gpus-per-node",
        type=int,
        default=4,
        help="GPUs per node for GB200 rows (4: one NVL72 compute tray; 64: a rack's 16 trays); "
        "the NVLink domain stays 72",
    )
    args = parser.parse_args(argv)
    cases = cases if cases is not None else all_cases(gb200_gpus_per_node=args.gb200_gpus_per_node)
    runs = runs if runs is not None else calibration_cases.all_cases()
    shown = [c for c in cases if not args.regime or args.regime in c.regimes]
    print(
        f"{'run':18s} {'model':16s} {'gpu':8s} {'gpus':>5s} {'seq':>6s} {'layout':38s} {'metric':9s} "
        f"{'measured':>9s} {'predicted':>9s} {'error':>7s} {'mfu':>5s} {'':4s} regime"
    )
    for c in shown:
        if not c.skip:
            print(line(c))
    s = summary(cases)
    print()
    print(f"not predicted ({len(s['skipped'])} rows):")
    for run_id, why in s["skipped"]:
        print(f"  {run_id:18s} {why}")
    print()
    print(f"rows: {s['rows']}; compared: {s['compared']}; GB200 gpus_per_node: {args.gb200_gpus_per_node}")
    print(_stats_line("overall", s["overall"]))
    for regime, stats in s["by_regime"].items():
        print(_stats_line(regime, stats))
    print()
    print(
        "by regime, split (calibration_cases.fit_run_ids; regime factors are fitted on fit rows only; "
        "target: median |error| ≤ 12 % on check rows):"
    )
    head = f"{'median':>7s} {'p90':>7s}"
    print(f"  {'regime':14s} {'fit n':>5s} {head}   {'check n':>7s} {head}  target")
    for regime, parts in s["by_regime_split"].items():
        f, c = parts["fit"], parts["check"]
        met = (
            f"too few check rows ({c['n']})"
            if c["n"] < MIN_CHECK_ROWS
            else ("met" if c["median_abs_error"] <= REGIME_TARGET else "NOT met")
        )
        print(f"  {regime:14s} {_split_cells(f)}   {_split_cells(c, 7)}  {met}")
    everything = all_rows_errors(cases, runs=runs)
    print(
        f"  all rows of runs.csv + runs_frontier.csv: n={len(everything)}  median |error| "
        f"{100 * statistics.median(everything):.1f} % (target ≤ 7 %)  p90 |error| "
        f"{100 * percentile(everything, 0.9):.1f} % (target ≤ 18 %)"
    )
    print("by source:")
    for source, stats in s["by_source"].items():
        print(_stats_line(source, stats))
    oom = [c for c in cases if c.fits is False]
    unexplained = [c.row["run_id"] for c in oom if not missing_memory_levers(c.row)]
    print(
        f"measured runs predicted not to fit in memory: {len(oom)}; without a lever the engine lacks: "
        f"{len(unexplained)} {unexplained if unexplained else ''}"
    )
    for c in oom:
        if levers := missing_memory_levers(c.row):
            print(f"  {c.row['run_id']:22s} the run used {'; '.join(levers)}: no engine input yet")
    print()
    _recipe_rows(cases, args.gb200_gpus_per_node)
    _issue32_rows(cases, args.gb200_gpus_per_node, runs=runs)
    accelerators = catalog_specs()["accelerators"]
    peaks = ", ".join(f"{slug} {accelerators[slug].peak_tflops('fp8'):,.0f}" for _, slug in GPU_SLUGS)
    print(
        "MFU basis: 'mfu' is the engine's model FLOPs ÷ the seed catalog's dense peak for the row's "
        f"precision (FP8 dense TFLOP/s: {peaks}). NeMo's Model TFLOP/sec/GPU counts model FLOPs with its "
        "own per-model formula (no recompute; full s×s attention, as the engine does, until NeMo commit "
        "6251117f4c of 2025-08-09 halved it for causal masks, nemo/utils/flops_formulas.py), so rows are "
        "compared on tokens/s/GPU where published; the long-context rows publish TFLOP/s only and are "
        "compared as model TFLOP/s."
    )


if __name__ == "__main__":
    main()
