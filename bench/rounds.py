"""Many change rounds in a row over a TPC-H work directory: what each run of a few models took.

    .venv/bin/python -m bench.rounds --workdir <work> --sf 0.1 --models q02,q06 --rounds 14

Uses the work directory a TPC-H run of `bench/run.py` left (its base tables, project and built
models; the same `--sf` and `--base-write-mode`), applies `--rounds` change rounds (TPC-H's
RF1/RF2 and updates, `bench/tpch_workload.py`) and after each runs the models with
`ivm_refresh` `--refresh` (default `full`: every run rebuilds in place, as `auto` chose for
every TPC-H query at SF 1). Per run it records the model's seconds, its rebuild statements
(`build state`), the rest (`around`) and the upkeep steps (`expire`, `compact`, `upkeep`), and
writes them to `--out` as JSON. Where the bench's three rounds never reach a state's snapshot
limit, these runs do: every ~11 runs of a state rebuilt in place pay its expiry.

A tool for finding where the time goes; it asserts nothing. `--start-round` numbers the
rounds (part of every changed row's hash): give each invocation over one work directory its
own range.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from bench import datagen
from bench.dbt_runs import environment_variables
from bench.options import parse_args as parse_bench_args
from bench.run import Benchmark, bench_variables
from dbt.adapters.spark_ivm.compiler.runtime.cost import Policy

#: Step labels of a run's upkeep (`runtime/commit.py`), as its timings name them.
UPKEEP_STEPS = ("expire", "compact", "upkeep")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--models", required=True, help="comma-separated, e.g. q02,q06")
    parser.add_argument("--rounds", type=int, default=14)
    parser.add_argument("--start-round", type=int, default=100)
    parser.add_argument("--fraction", type=float, default=0.001)
    parser.add_argument("--base-write-mode", choices=datagen.WRITE_MODES, default="merge-on-read")
    parser.add_argument("--refresh", choices=[p.value for p in Policy], default=Policy.FULL.value)
    parser.add_argument("--out", type=Path, required=True, help="JSON of every run")
    return parser.parse_args(argv)


def one_run(seconds: float, steps: list[tuple[str, float]]) -> dict[str, float]:
    """A model's run: its seconds, rebuild statements, the rest, and each upkeep step.

    >>> one_run(2.0, [("s1 build state", 0.5), ("build state", 1.0), ("s1 expire", 0.2)])
    {'seconds': 2.0, 'build': 1.5, 'around': 0.5, 'expire': 0.2, 'compact': 0.0, 'upkeep': 0.0}
    """
    build = sum((s for label, s in steps if label.endswith("build state")), 0.0)
    out = {"seconds": seconds, "build": round(build, 3), "around": round(seconds - build, 3)}
    for name in UPKEEP_STEPS:
        out[name] = round(sum((s for label, s in steps if label.split()[-1] == name), 0.0), 3)
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    bench_args = parse_bench_args(
        [
            "--workload",
            "tpch",
            "--sf",
            f"{args.sf:g}",
            "--workdir",
            str(args.workdir),
            "--base-write-mode",
            args.base_write_mode,
            "--fractions",
            f"{args.fraction:g}",
            "--scale-sfs",
            "",
            "--refresh",
            args.refresh,
        ]
    )
    variables = bench_variables(bench_args)
    models = args.models.split(",")
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in models}
    with environment_variables(variables):
        bench = Benchmark(bench_args)
        bench.start()
        bench.round_no = args.start_round
        for number in range(args.rounds):
            bench.apply_changes("", args.sf, args.fraction, f"round {number}")
            done = bench.dbt.run("--select", *models)
            for name, timing in done.models.items():
                runs[name].append(one_run(timing.seconds, timing.steps))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {"settings": vars(args) | {"workdir": "<work>", "out": "<out>"}, "runs": runs},
            indent=1,
            default=str,
        )
    )
    for name, found in runs.items():
        upkept = [r for r in found if r["expire"] or r["compact"]]
        print(
            f"{name}: median {statistics.median(r['seconds'] for r in found):.2f} s, around "
            f"{statistics.median(r['around'] for r in found):.2f} s; {len(upkept)} runs with "
            f"an expiry or compaction: {[round(r['expire'] + r['compact'], 2) for r in upkept]}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
