"""Where one ivm refresh spends its time, statement by statement, with Spark's plans.

    .venv/bin/python -m bench.profile --sf 1 --fraction 0.001 --rounds 2 [--reuse]

Uses the benchmark's data, changes and dbt project (`bench/run.py`) in its own work directory
(`bench/.work-profile`): generates the base tables (or, with `--reuse`, keeps those a previous
run left), builds the ivm models, then per round changes every base table and refreshes with
`DBT_SPARK_IVM_TIMINGS=1`. For every round it writes `round-N.md` into the work directory: per
model its statements with their seconds, and for each local-checkpoint statement (the logs,
the delta, the recomputed groups) the SQL and Spark's final adaptive plan with its metrics (rows
and time per operator), so that a slow statement shows which scan or join took the time.

Each round also counts the Spark jobs of its `dbt run` (Spark's status tracker): with one model
in `--models`, the jobs of that model's refresh (issue 37's budget for a one-table aggregate).

A tool for finding where the time goes before changing anything (the team's rule); it reports no
ratios and asserts nothing. The figures come from `bench/run.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

from bench import changes, datagen
from bench.dbt_runs import environment_variables
from bench.options import BENCH_DIR
from bench.options import parse_args as parse_bench_args
from bench.run import MODELS, Benchmark, bench_variables


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--fraction", type=float, default=0.001)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--no-change",
        type=int,
        default=0,
        help="refreshes with no change after the rounds (their per-statement medians go "
        "to no-change.md)",
    )
    parser.add_argument("--pattern", choices=changes.PATTERNS, default="clustered")
    parser.add_argument("--base-write-mode", choices=datagen.WRITE_MODES, default="copy-on-write")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated")
    parser.add_argument("--reuse", action="store_true", help="keep existing base tables")
    parser.add_argument(
        "--aux-states",
        choices=("auto", "always", "never"),
        help="DBT_SPARK_IVM_AUX_STATES for the ivm models (default: the plugin's)",
    )
    parser.add_argument(
        "--refresh",
        choices=("auto", "incremental", "full"),
        default="incremental",
        help="ivm_refresh of the models (default incremental: the refresh is what is profiled)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", type=Path, default=BENCH_DIR / ".work-profile")
    return parser.parse_args(argv)


def _metrics_tree(plan: Any, depth: int = 0) -> list[str]:
    """One line per physical operator: its one-line description and its non-zero SQL
    metrics (rows, time, files read); query stages are opened to the plans they ran."""
    values = []
    it = plan.metrics().iterator()
    while it.hasNext():
        entry = it.next()
        value = entry._2().value()
        if value:
            values.append(f"{entry._1()}={value}")
    text = plan.simpleString(200)[:240]
    lines = [f"{'  ' * depth}{text}" + (f"  [{', '.join(values)}]" if values else "")]
    if plan.nodeName().endswith("QueryStage"):
        return lines + _metrics_tree(plan.plan(), depth + 1)
    children = plan.children()
    for i in range(children.size()):
        lines += _metrics_tree(children.apply(i), depth + 1)
    return lines


def _final_plan(df: Any) -> Any:
    plan = df._jdf.queryExecution().executedPlan()
    if plan.nodeName() == "AdaptiveSparkPlan":  # after execution: its final plan
        plan = plan.executedPlan()
    return plan


class Recorder:
    """Wraps the executor's checkpoint to keep each checkpoint's SQL and plan (the plain
    scratch views and the measured delta alike)."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def install(self) -> None:
        import time

        from dbt.adapters.spark_ivm.connection_executor import ConnectionExecutor

        original = ConnectionExecutor._checkpoint
        recorder = self

        def checkpoint(
            executor: Any, spark: Any, frame: Any, view_name: str, eager: bool, select: str
        ) -> None:
            start = time.perf_counter()
            # as the plugin does: a lazy one is computed by the statement that counts it,
            # so its seconds here are those of planning it only; its plan is described
            # when the round is written, after the refresh computed it
            original(executor, spark, frame, view_name, eager, select)
            seconds = time.perf_counter() - start
            recorder.entries.append(
                {"view": view_name, "seconds": seconds, "sql": select, "frame": frame}
            )

        ConnectionExecutor._checkpoint = checkpoint  # type: ignore[method-assign]


def _described(frame: Any) -> str:
    """The query's phases, slowest optimizer rules and final plan with its metrics."""
    try:
        tracker = frame._jdf.queryExecution().tracker()
        timed = []
        it = tracker.phases().iterator()
        while it.hasNext():
            entry = it.next()
            timed.append(f"{entry._1()} {entry._2().durationMs()} ms")
        rules = []
        it = tracker.rules().iterator()
        while it.hasNext():
            entry = it.next()
            rules.append((entry._2().totalTimeNs() / 1e6, entry._1().split(".")[-1]))
        slowest = ", ".join(f"{name} {ms:.0f} ms" for ms, name in sorted(rules)[-6:][::-1])
        plan = "phases: " + ", ".join(timed) + "\n"
        plan += f"slowest rules: {slowest}\n"
        return plan + "\n".join(_metrics_tree(_final_plan(frame)))
    except Exception as exc:  # noqa: BLE001 - the plan is a diagnostic only
        return f"(no plan: {exc})"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    models = [m for m in args.models.split(",") if m]
    unknown = sorted(set(models) - set(MODELS))
    if unknown:
        sys.exit(f"--models: no benchmark model {', '.join(unknown)} (known: {', '.join(MODELS)})")
    # bench/run.py's own defaults (its workload, refresh policy, ...), then this tool's
    bench_args = parse_bench_args([])
    vars(bench_args).update(
        sf=args.sf,
        fractions=[args.fraction],
        reps=1,
        scale_sfs=[],
        scale_fraction=args.fraction,
        pattern=args.pattern,
        base_write_mode=args.base_write_mode,
        steady=0,
        steady_fraction=args.fraction,
        seed=args.seed,
        warmup_rounds=0,
        rows_per_file=75000,
        driver_memory="12g",
        shuffle_partitions=8,
        workdir=args.workdir,
        refresh=args.refresh,
    )
    variables = bench_variables(bench_args)
    if args.aux_states:
        variables["DBT_SPARK_IVM_AUX_STATES"] = args.aux_states
    recorder = Recorder()
    recorder.install()
    bench = Benchmark(bench_args)
    select = " ".join(models)
    with environment_variables(variables):
        bench.start()
        spark = bench.spark
        have = {r[1] for r in spark.sql(f"SHOW TABLES IN {datagen.SOURCE_SCHEMA}").collect()}
        if not (args.reuse and {t.name for t in datagen.TABLES} <= have):
            bench.load(args.sf)
        built = bench.dbt.run("--select", select, "--full-refresh")
        bench.say(bench._describe("build", built))
        for number in range(1, args.rounds + 1):
            seed = f"{args.seed}/profile/{os.getpid()}/{number}"
            bench.apply_changes(seed, args.sf, args.fraction, f"round {number}")
            recorder.entries.clear()
            before = _last_job(spark)
            inv = bench.dbt.run("--select", select)
            jobs = _last_job(spark) - before
            bench.say(bench._describe(f"round {number} refresh", inv) + f"; {jobs} Spark jobs")
            out = [f"# round {number}: SF {args.sf:g}, {args.fraction:.1%}, {args.pattern}\n"]
            out.append(f"Spark jobs of the refresh of {select}: {jobs}\n")
            out += [f"    {n} job(s)  {text}" for text, n in _jobs_by_statement(spark, before)]
            out.append("")
            for name, m in inv.models.items():
                out.append(f"## {name}: {m.seconds:.2f} s\n\n{m.message}\n")
                out += [f"    {s:7.3f}  {label}" for label, s in m.steps]
                out.append("")
            out.append("# checkpoints (in run order)\n")
            for e in recorder.entries:
                out.append(f"## {e['view']}: {e['seconds']:.3f} s\n")
                out.append("```sql\n" + e["sql"] + "\n```\n")
                out.append("```\n" + _described(e["frame"]) + "\n```\n")
            path = args.workdir / f"round-{number}.md"
            path.write_text("\n".join(out))
            (args.workdir / f"round-{number}.json").write_text(
                json.dumps({n: m.steps for n, m in inv.models.items()}, indent=1)
            )
            bench.say(f"wrote {path}")
        if args.no_change:
            runs = [bench.dbt.run("--select", select) for _ in range(args.no_change)]
            for number, inv in enumerate(runs, 1):
                bench.say(bench._describe(f"no-change refresh {number}", inv))
            path = args.workdir / "no-change.md"
            path.write_text(_no_change_markdown(runs))
            bench.say(f"wrote {path}")
    return 0


def _last_job(spark: Any) -> int:
    """The id of the newest Spark job (ids count up, one per job); -1 before any."""
    ids = list(spark.sparkContext.statusTracker().getJobIdsForGroup(None))
    return max(ids, default=-1)


def _jobs_by_statement(spark: Any, after: int) -> list[tuple[str, int]]:
    """The SQL executions that ran jobs newer than job `after`, in order: the start of each
    one's text and its number of jobs (Spark's SQL status store)."""
    store = spark._jsparkSession.sharedState().statusStore()
    found = []
    for execution in _scala(store.executionsList()):
        ids = [int(j) for j in _scala(execution.jobs().keys())]
        newer = [j for j in ids if j > after]
        if newer:
            text = " ".join(str(execution.description()).split())
            # the description of a DataFrame action is its call site: the plan's operators say more
            plan = str(execution.physicalPlanDescription()).split("== Physical Plan ==")[-1]
            operators = [
                line.strip(" +-:*()0123456789").split(" ")[0]
                for line in plan.splitlines()
                if line.strip().startswith(
                    ("+-", ":-", "*", "AdaptiveSparkPlan", "Append", "Write")
                )
                or (line and not line.startswith(" "))
            ]
            text += " | " + " ".join(o for o in operators[:14] if o)
            found.append((min(newer), text[:300], len(newer)))
    return [(text, n) for _, text, n in sorted(found)]


def _scala(collection: Any) -> list[Any]:
    """The elements of a Scala collection reached through py4j."""
    it, out = collection.iterator(), []
    while it.hasNext():
        out.append(it.next())
    return out


def _no_change_markdown(runs: list[Any]) -> str:
    """Per model: the median of its no-change refreshes and of each of its statements (by
    position, as the refreshes all run the same statements)."""
    out = [f"# {len(runs)} refreshes with no change (medians)\n"]
    for name in runs[0].models:
        timings = [inv.models[name] for inv in runs]
        out.append(f"## {name}: {statistics.median(m.seconds for m in timings):.3f} s\n")
        out.append(f"{timings[0].message}\n")
        for index, (label, _) in enumerate(timings[0].steps):
            seconds = [m.steps[index][1] for m in timings if len(m.steps) > index]
            out.append(f"    {statistics.median(seconds):7.3f}  {label}")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
