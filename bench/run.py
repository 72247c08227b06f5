"""The ivm benchmark: incremental refresh against full rebuild on TPC-H-shaped Iceberg data.

    .venv/bin/python -m bench.run --sf 1 --scale-sfs 0.3,3

One process: dbt runs in-process (`dbtRunner`, 1 thread) on `bench/project`, and the
SparkSession that the adapter starts generates the data, applies the changes and checks the
results. Per scale factor: generate the base tables, build every model as `ivm` and as
`table`, time no-change refreshes, then per change fraction and repetition: change every base
table, time `dbt run --select tag:ivm` (the refresh) and `dbt run --select tag:full` (the
full rebuild), and check that every ivm model equals its table twin (a mismatch aborts with
exit code 1). With `--steady N`, after the main scale factor's rounds: N change rounds in a row
at `--steady-fraction`, timing only the refresh and recording the state tables' files (the
table twins are rebuilt and checked every `--steady-check-every` rounds and after the last).
Writes `results.json`, the plots and the results section of bench/README.md.

`--workload tpch` runs the same plan on the 22 TPC-H queries (`bench/tpch_workload.py`):
dbgen's data, the queries as ivm models and as tables in a dbt project generated under the
work directory, and rounds of TPC-H's refresh functions RF1/RF2 plus updates
(`bench/tpch.py`); its results go to `bench/results/tpch` and the README there by default.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shlex
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from bench import changes, checks, datagen, report, tpch_workload
from bench.dbt_runs import PROJECT_DIR, BenchError, Dbt, Invocation, environment_variables
from bench.load import load as load_tables
from bench.machine import environment
from bench.options import parse_args, tables_first
from bench.report.figures import LOG_KEY
from dbt.adapters.spark_ivm.compiler.capture.delta_log import LOG_SUFFIX
from dbt.adapters.spark_ivm.compiler.runtime.cost import REFRESH_ENV

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

TARGET_SCHEMA = "bench"
MODELS = (
    "pricing_summary",
    "nation_revenue",
    "customer_orders",
    "nation_segments",
    "status_revenue",  # over nation_revenue: its delta log
)
FULL_SUFFIX = "_full"


# ------------------------------------------------------------------------------------------------
# the benchmark
# ------------------------------------------------------------------------------------------------


class Benchmark:
    """Runs the whole plan and collects every figure into `self.results`."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.workdir: Path = args.workdir.resolve()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.log_file = self.workdir / "bench.log"
        self.tpch = args.workload == "tpch"
        if self.tpch:
            self.models: tuple[str, ...] = tpch_workload.MODELS
            self.source_schema = tpch_workload.SOURCE_SCHEMA
            project = tpch_workload.write_project(self.workdir / "tpch_project", PROJECT_DIR)
        else:
            self.models, self.source_schema, project = MODELS, datagen.SOURCE_SCHEMA, PROJECT_DIR
        self.dbt = Dbt(self.workdir, project)
        #: Change rounds applied so far (the TPC-H rounds' number: part of every row's hash).
        self.round_no = 0
        self._spark: SparkSession | None = None
        self.results: dict[str, Any] = {
            "format": 1,
            "status": "running",
            "workload": args.workload,
            "settings": {
                "workload": args.workload,
                "sf": args.sf,
                "fractions": args.fractions,
                "reps": args.reps,
                "scale_sfs": args.scale_sfs,
                "scale_fraction": args.scale_fraction,
                "pattern": None if self.tpch else args.pattern,
                "base_write_mode": args.base_write_mode,
                "refresh": args.refresh,
                "steady": args.steady,
                "steady_fraction": args.steady_fraction,
                "steady_check_every": args.steady_check_every,
                "seed": args.seed,
                "warmup_rounds": args.warmup_rounds,
                "order": args.order,
                "rows_per_file": None if self.tpch else args.rows_per_file,
                "driver_memory": args.driver_memory,
                "shuffle_partitions": args.shuffle_partitions,
                "dbt_threads": 1,
            },
            "models": list(self.models),
            "runs": [],
        }
        self.bar: tqdm | None = None
        if args.resume:
            self.results = self.interrupted()

    # ---------------------------------------------------------------------------- plumbing

    def interrupted(self) -> dict[str, Any]:
        """The results of the run in the work directory that stopped during its steady-state
        rounds (`--resume`); a `BenchError` if there is none or its settings differ."""
        if any(sf != self.args.sf for sf in self.args.scale_sfs):
            # the scale series runs after the steady rounds: resuming them is not built
            raise BenchError("--resume: only a run without a scale series (--scale-sfs '')")
        partial = self.workdir / "results.partial.json"
        if not partial.exists():
            raise BenchError(f"--resume: no interrupted run in {self.workdir} ({partial.name})")
        found = json.loads(partial.read_text())
        was, now = found.get("settings") or {}, self.results["settings"]
        if was != now:
            differ = sorted(k for k in {*was, *now} if was.get(k) != now.get(k))
            raise BenchError(f"--resume: options differ from the interrupted run's: {differ}")
        runs = found.get("runs") or []
        if not runs or "steady" not in runs[0]:
            raise BenchError("--resume: the interrupted run had not begun its steady rounds")
        if len(runs[0]["steady"]["rounds"]) >= self.args.steady:
            raise BenchError("--resume: the interrupted run had done all its steady rounds")
        found["status"] = "running"
        return found

    @property
    def spark(self) -> SparkSession:
        if self._spark is None:
            raise BenchError("Spark is not started yet")
        return self._spark

    def say(self, text: str) -> None:
        """A line on the console (above the progress bar) and in bench.log."""
        tqdm.write(text)
        with self.log_file.open("a") as fh:
            fh.write(f"{dt.datetime.now():%H:%M:%S} {text}\n")

    def step(self, text: str) -> None:
        if self.bar is not None:
            self.bar.set_description_str(text)

    def done(self) -> None:
        if self.bar is not None:
            self.bar.update()
        (self.workdir / "results.partial.json").write_text(json.dumps(self.results, indent=1))

    def fail(self, error: str) -> int:
        """Record why the run stopped; the exit code."""
        self.results["status"] = "failed"
        self.results["error"] = error
        self.say(f"BENCHMARK FAILED: {error}")
        return 1

    def start(self) -> None:
        """First dbt invocation: starts the embedded Spark, creates the schemas."""
        self.dbt.invoke(
            "run-operation",
            "bench_bootstrap",
            "--args",
            json.dumps({"schemas": [self.source_schema, TARGET_SCHEMA]}),
        )
        from pyspark import SparkContext
        from pyspark.sql import SparkSession

        if SparkContext._active_spark_context is None:
            raise BenchError("dbt did not start Spark in this process (method: session?)")
        self._spark = SparkSession.builder.getOrCreate()
        self.spark.sparkContext.setLogLevel("ERROR")
        self.results.update(environment(self.spark))

    # ---------------------------------------------------------------------------- steps

    def check(self, label: str) -> list[dict[str, Any]]:
        """Every ivm model against its table twin; a difference raises `Mismatch`."""
        found = [
            checks.compare(
                self.spark, m, f"{TARGET_SCHEMA}.{m}", f"{TARGET_SCHEMA}.{m}{FULL_SUFFIX}"
            )
            for m in self.models
        ]
        bad = [c for c in found if not c.ok]
        if bad:
            raise checks.Mismatch(
                f"{label}: ivm model differs from its table twin:\n"
                + "\n".join(f"{c.model}: {c.problem}" for c in bad)
            )
        return [c.as_json() for c in found]

    def _describe(self, what: str, inv: Invocation) -> str:
        models = ", ".join(f"{n} {m.seconds:.1f}s" for n, m in inv.models.items())
        return f"  {what}: {inv.wall:.1f}s wall ({models})"

    def refresh(self) -> Invocation:
        return self.dbt.run("--select", "tag:ivm")

    def rebuild(self) -> Invocation:
        return self.dbt.run("--select", "tag:full")

    def load(self, sf: float) -> dict[str, Any]:
        if self.tpch:
            loaded = tpch_workload.load(
                self.spark, sf, self.workdir / "dbgen", self.args.base_write_mode
            )
            self.say(f"  dbgen: {loaded['dbgen_seconds']:.1f}s")
            for t in loaded["tables"]:
                self.say(
                    f"  {t['name']}: {t['rows']:,} rows in {t['files']} files ({t['seconds']:.1f}s)"
                )
            return loaded
        bars: list[tqdm] = []

        def progress(table: datagen.BaseTable, expected: int) -> Any:
            bar = tqdm(
                total=expected, desc=f"  {table.name}", unit=" rows", leave=False, position=1
            )
            bars.append(bar)
            return bar.update

        start = time.perf_counter()
        try:
            tables = load_tables(
                self.spark,
                sf,
                f"{self.args.seed}/load",
                self.args.rows_per_file,
                progress,
                self.args.base_write_mode,
            )
        finally:
            for bar in bars:
                bar.close()
        seconds = time.perf_counter() - start
        for t in tables:
            self.say(f"  {t.name}: {t.rows:,} rows in {t.files} files ({t.seconds:.1f}s)")
        return {"seconds": seconds, "tables": [asdict(t) for t in tables]}

    def apply_changes(
        self, seed: str, sf: float, fraction: float, label: str
    ) -> tuple[list[dict[str, Any]], float]:
        """One round of changes to every base table; what it did and its seconds."""
        self.step(f"{label}: changes")
        self.round_no += 1
        start = time.perf_counter()
        if self.tpch:
            applied = tpch_workload.apply_round(self.spark, self.args.seed, fraction, self.round_no)
            what = tpch_workload.describe(applied)
        else:
            found = changes.apply_round(
                self.spark, seed, fraction, self.args.pattern, datagen.scale_of(sf).parts
            )
            applied = [asdict(c) for c in found]
            what = ", ".join(f"{c.table} +{c.inserted} ~{c.updated} -{c.deleted}" for c in found)
        change_seconds = time.perf_counter() - start
        self.say(f"{label}: changes ({change_seconds:.1f}s) {what}")
        return applied, change_seconds

    def change_round(
        self, rounds: list[dict[str, Any]], sf: float, fraction: float, rep: int, label: str
    ) -> None:
        """Change every base table, time the refresh and the rebuild, check the models."""
        seed = f"{self.args.seed}/{sf:g}/{fraction:g}/{rep}"
        applied, change_seconds = self.apply_changes(seed, sf, fraction, label)
        sides = [("ivm refresh ", self.refresh), ("full rebuild", self.rebuild)]
        table_first = tables_first(self.args.order, self.round_no)
        timed: dict[str, Invocation] = {}
        for what, run in reversed(sides) if table_first else sides:
            self.step(f"{label}: {what.strip()}")
            timed[what] = run()
            self.say(self._describe(what, timed[what]))
        ivm, full = (timed[what] for what, _ in sides)
        if table_first:
            # A twin that reads an ivm model (status_revenue_full reads nation_revenue) was
            # rebuilt over the models as the previous round left them: again, untimed.
            self.dbt.run("--select", "tag:full,tag:ivm+")
        self.step(f"{label}: equality checks")
        found = self.check(label)
        rounds.append(
            {
                "fraction": fraction,
                "rep": rep,
                "changes": applied,
                "changes_seconds": change_seconds,
                "first": "full" if table_first else "ivm",
                "ivm": ivm.as_json(),
                "full": full.as_json(),
                "checks": found,
            }
        )
        self.done()

    def state_files(self) -> dict[str, dict[str, int | None]]:
        """Per ivm model, its state table's current snapshot: data files, delete files, bytes
        and records (the snapshot summary's totals; records in data files, deleted ones
        included), and the table's snapshots; the same for every delta log
        (`<model>__ivm_dlog`, kept for an ivm model that another one reads), under the key
        `<model>{LOG_KEY}`.

        Reads table metadata only (the `refs` and `snapshots` metadata tables)."""
        found: dict[str, dict[str, int | None]] = {}
        relations = [(m, f"{TARGET_SCHEMA}.{m}__ivm_state") for m in self.models]
        relations += [(f"{m}{LOG_KEY}", f"{TARGET_SCHEMA}.{m}{LOG_SUFFIX}") for m in self.models]
        for model, state in relations:
            exists = self.spark.catalog.tableExists(state)
            if not exists and model.endswith(LOG_KEY):
                continue  # no ivm model reads this one: it keeps no delta log
            if not exists:
                row = []  # a model whose refresh keeps no `__ivm_state` table
            else:
                row = self.spark.sql(
                    f"SELECT (SELECT count(*) FROM {state}.snapshots), "
                    "summary['total-data-files'], summary['total-delete-files'], "
                    "summary['total-files-size'], summary['total-records'] "
                    f"FROM {state}.snapshots WHERE snapshot_id = "
                    f"(SELECT snapshot_id FROM {state}.refs WHERE name = 'main')"
                ).collect()
            values = list(row[0]) if row else [None] * 5
            found[model] = {
                key: None if value is None else int(value)
                for key, value in zip(
                    ("snapshots", "data_files", "delete_files", "bytes", "records"),
                    values,
                    strict=True,
                )
            }
            found[model]["metadata_files"] = self.metadata_files(state) if row else None
        return found

    def metadata_files(self, table: str) -> int | None:
        """The `*.metadata.json` files in the table's metadata folder (a local warehouse;
        None elsewhere): what `sql/layout.BOUNDED_METADATA` must keep bounded."""
        rows = self.spark.sql(f"DESCRIBE TABLE EXTENDED {table}").collect()
        location = next((str(r[1]) for r in rows if str(r[0]).strip() == "Location"), "")
        if not location.startswith(("file:", "/")):
            return None
        folder = Path(location.removeprefix("file:")) / "metadata"
        return len(list(folder.glob("*.metadata.json")))

    def steady(self, run: dict[str, Any], sf: float, count: int, fraction: float) -> None:
        """`count` change rounds in a row: change every base table and time the ivm refresh;
        rebuild the table twins and check every `--steady-check-every` rounds and after the
        last. Rounds `run` has done already are not run again (`--resume`): the round a kill
        interrupted had its changes applied in part, in whole or not at all, so an ordinary
        refresh finishes it, checked, and it is recorded with `"resumed": true` and no
        changes listed."""
        steady: dict[str, Any] = run.setdefault("steady", {"fraction": fraction, "rounds": []})
        resumed = len(steady["rounds"]) + 1 if steady["rounds"] else None
        for number in range(len(steady["rounds"]) + 1, count + 1):
            label = f"SF {sf:g}, steady state, {fraction:.1%} changed, round {number}/{count}"
            applied: list[dict[str, Any]] = []
            change_seconds: float | None = None
            if number == resumed:
                self.say(f"{label}: resumed after a kill, an ordinary refresh finishes the round")
            else:
                seed = f"{self.args.seed}/{sf:g}/steady/{fraction:g}/{number}"
                applied, change_seconds = self.apply_changes(seed, sf, fraction, label)
            self.step(f"{label}: ivm refresh")
            ivm = self.refresh()
            self.say(self._describe("ivm refresh ", ivm))
            state = self.state_files()
            self.say(
                "  state files (data/delete/snapshots): "
                + ", ".join(
                    f"{m} {s['data_files']}/{s['delete_files']}/{s['snapshots']}"
                    for m, s in state.items()
                )
            )
            record: dict[str, Any] = {
                "round": number,
                "changes": applied,
                "changes_seconds": change_seconds,
                "ivm": ivm.as_json(),
                "state": state,
                "full": None,
                "checks": [],
            }
            if number == resumed:
                record["resumed"] = True
            every = self.args.steady_check_every
            if number == resumed or number % every == 0 or number == count:
                self.step(f"{label}: full rebuild")
                full = self.rebuild()
                self.say(self._describe("full rebuild", full))
                self.step(f"{label}: equality checks")
                record["full"] = full.as_json()
                record["checks"] = self.check(label)
            steady["rounds"].append(record)
            self.done()

    def scale_factor(self, sf: float, fractions: Sequence[float], warmup: int) -> None:
        """Everything at one scale factor: data, builds, `warmup` untimed change rounds,
        no-change refreshes, change rounds."""
        run: dict[str, Any] = {"sf": sf, "warmup": [], "no_change": [], "rounds": []}
        self.results["runs"].append(run)
        self.step(f"SF {sf:g}: generating data")
        self.say(f"SF {sf:g}: generating the base tables")
        run["load"] = self.load(sf)
        self.done()
        self.step(f"SF {sf:g}: initial builds")
        ivm = self.dbt.run("--select", "tag:ivm", "--full-refresh")
        self.say(self._describe(f"SF {sf:g} ivm build  ", ivm))
        full = self.rebuild()
        self.say(self._describe(f"SF {sf:g} table build", full))
        run["build"] = {"ivm": ivm.as_json(), "full": full.as_json(), "checks": self.check("build")}
        self.done()
        # with no change fractions (only --steady), warm up at the steady fraction
        first = fractions[0] if fractions else self.args.steady_fraction
        for number in range(warmup):
            label = f"SF {sf:g}, {first:.1%} changed, warm-up {number + 1}"
            self.change_round(run["warmup"], sf, first, -1 - number, label)
        for rep in range(self.args.reps):
            self.step(f"SF {sf:g}: refresh without change, rep {rep + 1}")
            inv = self.refresh()
            self.say(self._describe(f"SF {sf:g} no-change refresh", inv))
            run["no_change"].append(inv.as_json())
            self.done()
        for fraction in fractions:
            for rep in range(self.args.reps):
                label = f"SF {sf:g}, {fraction:.1%} changed, rep {rep + 1}"
                self.change_round(run["rounds"], sf, fraction, rep, label)

    def plan(self) -> list[tuple[float, list[float]]]:
        """(scale factor, change fractions) in the order they run: the main one first."""
        args = self.args
        main = list(args.fractions)
        if args.scale_sfs and args.scale_fraction not in main:
            main.append(args.scale_fraction)
        steps = [(args.sf, main)]
        steps += [(sf, [args.scale_fraction]) for sf in args.scale_sfs if sf != args.sf]
        return steps

    def run(self) -> None:
        plan = self.plan()
        warmup = self.args.warmup_rounds
        steady = self.args.steady
        steps = warmup + steady + sum(2 + self.args.reps * (1 + len(f)) for _, f in plan)
        if self.args.resume:  # only the steady rounds not done yet (`interrupted`)
            steps = steady - len(self.results["runs"][0]["steady"]["rounds"])
        with tqdm(total=steps, unit=" steps", position=0) as self.bar:
            self.step("starting Spark")
            self.start()
            if self.args.resume:
                run = self.results["runs"][0]
                self.steady(run, self.args.sf, steady, self.args.steady_fraction)
                return
            for number, (sf, fractions) in enumerate(plan):
                # the first scale factor warms the JVM up for all
                self.scale_factor(sf, fractions, warmup if number == 0 else 0)
                if number == 0 and steady > 0:
                    # at the main scale factor, before the scale series replaces its tables
                    self.steady(self.results["runs"][-1], sf, steady, self.args.steady_fraction)


def bench_variables(args: argparse.Namespace) -> dict[str, str]:
    """The environment of the bench project's dbt runs (`bench/project/profiles.yml`) for the
    benchmark's options: the work directory's Spark, per-statement timings, the policy."""
    return {
        "SPARK_IVM_BENCH_HOME": str((args.workdir / "ivm_home").resolve()),
        "SPARK_IVM_BENCH_DRIVER_MEMORY": args.driver_memory,
        "SPARK_IVM_BENCH_SHUFFLE_PARTITIONS": str(args.shuffle_partitions),
        "DBT_SPARK_IVM_TIMINGS": "1",
        REFRESH_ENV: args.refresh,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; 0 when every figure was measured and every check passed."""
    args = parse_args(argv)
    command = shlex.join(["python", "-m", "bench.run", *(sys.argv[1:] if argv is None else argv)])
    args.out.mkdir(parents=True, exist_ok=True)
    variables = bench_variables(args)
    try:
        bench = Benchmark(args)
    except BenchError as exc:
        print(f"BENCHMARK NOT STARTED: {exc}", file=sys.stderr)
        return 2
    if args.resume:
        bench.results.setdefault("resumed", []).append(
            {"command": command, "at": dt.datetime.now(dt.UTC).isoformat()}
        )
    else:
        bench.results["command"] = command
    started = time.perf_counter()
    status = 0
    with environment_variables(variables):
        try:
            bench.run()
            bench.results["status"] = "ok"
        except (BenchError, checks.Mismatch) as exc:
            status = bench.fail(str(exc))
        except Exception as exc:  # noqa: BLE001 - a Spark error: keep what was measured
            status = bench.fail(f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
    bench.results["seconds"] = time.perf_counter() - started
    if status == 0:
        bench.results["summary"] = report.summarize(bench.results)
    results = args.out / "results.json"
    results.write_text(json.dumps(bench.results, indent=1) + "\n")
    bench.say(f"results: {results} ({bench.results['seconds']:.0f}s)")
    if status == 0:
        if args.workload == "tpch" and not args.readme.exists():
            args.readme.write_text(
                f"# Benchmark: the 22 TPC-H queries, SF {args.sf:g}, {args.base_write_mode}\n\n"
                f"```sh\n.venv/bin/{command}\n```\n\n"
            )
        for path in report.write_all(results, args.readme):
            bench.say(f"wrote {path}")
    return status


if __name__ == "__main__":
    sys.exit(main())
