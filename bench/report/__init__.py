"""Figures of a benchmark run: medians, targets, plots and the results section of the README.

    .venv/bin/python -m bench.report bench/results/results.json [--readme bench/README.md]

Reads `results.json` (written by bench/run.py), writes `refresh_vs_fraction.png` and
`refresh_vs_scale.png` (and `steady_state.png` for a run with `--steady`, `refresh_by_model.png`
for the TPC-H workload) beside it and replaces the part of the README between
`<!-- results:start -->` and `<!-- results:end -->`. `figures` computes,
`plots` draws, `markdown` writes the section.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path

from bench.report.figures import summarize, workload
from bench.report.markdown import markdown, replace_section
from bench.report.plots import (
    FRACTION_PLOT,
    MODEL_PLOT,
    SCALE_PLOT,
    STEADY_PLOT,
    plot_fractions,
    plot_models,
    plot_scale,
    plot_steady,
)

__all__ = ["main", "markdown", "summarize", "write_all"]


def write_all(results_path: Path, readme: Path) -> list[Path]:
    """Plots beside `results_path`, and the results section of `readme`."""

    results = json.loads(results_path.read_text())
    results["summary"] = summarize(results)  # from the raw figures, with this code
    out = results_path.parent
    plot_fractions(results["summary"], out / FRACTION_PLOT)
    plot_scale(results["summary"], out / SCALE_PLOT)
    written = [out / FRACTION_PLOT, out / SCALE_PLOT]
    if workload(results) == "tpch":
        plot_models(results["summary"], out / MODEL_PLOT)
        written.append(out / MODEL_PLOT)
    if results["summary"].get("steady"):
        plot_steady(results["summary"]["steady"], out / STEADY_PLOT)
        written.append(out / STEADY_PLOT)
    image_dir = os.path.relpath(out.resolve(), readme.resolve().parent)
    old = readme.read_text() if readme.exists() else ""
    readme.write_text(replace_section(old, markdown(results, image_dir)))
    return [*written, readme]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, help="results.json of a benchmark run")
    parser.add_argument(
        "--readme",
        type=Path,
        default=None,
        help="bench/README.md; for a TPC-H run (`--workload tpch`) README.md beside the JSON",
    )
    args = parser.parse_args(argv)
    readme = args.readme
    if readme is None:
        tpch = workload(json.loads(args.results.read_text())) == "tpch"
        readme = args.results.parent if tpch else Path(__file__).resolve().parent.parent
        readme = readme / "README.md"
    for path in write_all(args.results, readme):
        print(f"wrote {path}")
    return 0
