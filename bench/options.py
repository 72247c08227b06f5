"""The command line of `python -m bench.run` (and of bench/profile.py, which shares it)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from bench import changes, datagen
from dbt.adapters.spark_ivm.compiler.runtime.cost import Policy

BENCH_DIR = Path(__file__).resolve().parent
#: The star workload (bench/datagen.py, bench/project) or the 22 TPC-H queries.
WORKLOADS = ("star", "tpch")
#: Which reads a change round's change first (`--order`).
ORDERS = ("alternate", "ivm-first", "table-first")
#: Steady-state rounds between two rebuilds of the table twins and equality checks (and one
#: after the last round), unless `--steady-check-every` says otherwise.
STEADY_CHECK_EVERY = 10


def tables_first(order: str, round_no: int) -> bool:
    """Does change round `round_no` (counted from 1, warm-up rounds included) time the
    table rebuild before the ivm refresh? In turn under `alternate`, so that over a run's
    rounds each reads the change first as often.

    >>> [tables_first("alternate", n) for n in (1, 2, 3)], tables_first("ivm-first", 2)
    ([False, True, False], False)
    """
    return order == "table-first" or (order == "alternate" and round_no % 2 == 0)


DESCRIPTION = (
    "The ivm benchmark: incremental refresh against full rebuild on TPC-H-shaped Iceberg data."
)


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=DESCRIPTION)
    parser.add_argument(
        "--workload",
        choices=WORKLOADS,
        default="star",
        help="star: the four models on bench/datagen.py's tables; tpch: the 22 TPC-H queries "
        "on dbgen's data (bench/tpch_workload.py)",
    )
    parser.add_argument("--sf", type=float, default=1.0, help="scale factor (1: ~6M lines)")
    parser.add_argument(
        "--fractions", type=_floats, default=[0.001, 0.01, 0.1], help="change fractions"
    )
    parser.add_argument("--reps", type=int, default=3, help="repetitions of every timing")
    parser.add_argument(
        "--scale-sfs",
        type=_floats,
        default=[0.3, 3.0],
        help="more scale factors for the scale series ('' for none)",
    )
    parser.add_argument(
        "--scale-fraction", type=float, default=0.001, help="change fraction of the scale series"
    )
    parser.add_argument(
        "--pattern",
        choices=changes.PATTERNS,
        default="clustered",
        help="which rows change (star workload; tpch picks rows by a hash of the key)",
    )
    parser.add_argument(
        "--base-write-mode",
        choices=datagen.WRITE_MODES,
        default="copy-on-write",
        help="how DELETE/UPDATE/MERGE change the base tables (merge-on-read: delete files)",
    )
    parser.add_argument(
        "--refresh",
        choices=[p.value for p in Policy],
        default=Policy.AUTO.value,
        help="the ivm models' ivm_refresh: auto (the default: refresh or rebuild by the "
        "estimates), incremental (always refresh) or full",
    )
    parser.add_argument(
        "--steady",
        type=int,
        default=0,
        help="change rounds in a row at the main SF after its rounds, refresh only (0: none)",
    )
    parser.add_argument(
        "--steady-fraction", type=float, default=0.001, help="change fraction of --steady"
    )
    parser.add_argument(
        "--steady-check-every",
        type=int,
        default=STEADY_CHECK_EVERY,
        help="steady-state rounds between two rebuilds of the table twins and equality checks",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--warmup-rounds",
        type=int,
        default=1,
        help="untimed change rounds before the first measurement (JIT, class loading)",
    )
    parser.add_argument(
        "--order",
        choices=ORDERS,
        default="alternate",
        help="which of the two reads a round's change first: the ivm refresh, the table "
        "rebuild, or each in turn, round by round (the default: the first reader of a change "
        "finds its files cold, the second may find them cached); where the tables go first, "
        "the twins that read an ivm model are rebuilt again, untimed, after the refresh",
    )
    parser.add_argument(
        "--rebuild-first",
        dest="order",
        action="store_const",
        const="table-first",
        help="the same as --order table-first",
    )
    parser.add_argument(
        "--rows-per-file",
        type=int,
        default=75_000,
        help="base table rows per data file (star workload)",
    )
    parser.add_argument("--driver-memory", default="12g", help="spark.driver.memory")
    parser.add_argument("--shuffle-partitions", type=int, default=8)
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where the JSON and the plots go (bench/results; tpch: bench/results/tpch)",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="warehouse, dbt target and logs (bench/.work; tpch: bench/.work-tpch)",
    )
    parser.add_argument(
        "--readme",
        type=Path,
        default=None,
        help="markdown file whose results section is rewritten "
        "(bench/README.md; tpch: README.md in --out)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="go on with the steady-state rounds of the run in --workdir that a kill stopped "
        "(its results.partial.json; the same other options, no scale series): an ordinary "
        "refresh finishes the interrupted round and is checked, then the remaining rounds run",
    )
    args = parser.parse_args(argv)
    if args.resume and args.steady < 1:
        parser.error("--resume: only a run with --steady rounds can be resumed")
    if args.steady < 0:
        parser.error("--steady: a number of rounds, 0 for none")
    if args.steady_check_every < 1:
        parser.error("--steady-check-every: at least 1")
    tpch = args.workload == "tpch"
    if args.out is None:
        args.out = BENCH_DIR / "results" / "tpch" if tpch else BENCH_DIR / "results"
    if args.workdir is None:
        args.workdir = BENCH_DIR / (".work-tpch" if tpch else ".work")
    if args.readme is None:
        args.readme = args.out / "README.md" if tpch else BENCH_DIR / "README.md"
    return args
