"""The benchmark (bench/) at SF 0.01, so that it cannot rot: it runs in this process on the
shared Spark, refreshes really refresh, every refresh is checked against its table twin, and
the JSON, the plots and the markdown table come out. The run uses merge-on-read base tables
and one steady-state round (`--steady 1`), so that those code paths run too; the report of a
long steady state is tested on the tiny run's figures repeated."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from bench import checks, datagen, report
from bench import run as bench_run
from bench.options import STEADY_CHECK_EVERY
from bench.report import figures, plots
from dbt.adapters.spark_ivm.compiler.sql.layout import METADATA_VERSIONS

MODELS = bench_run.MODELS
FRACTION = 0.01
STEADY_ROUNDS = 1  # each round costs a refresh of every model: the cheapest steady state
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path, Path]:
    """One benchmark run: SF 0.01, 1 % changed, 1 repetition, no scale series, merge-on-read
    base tables, then STEADY_ROUNDS steady-state rounds."""
    root = tmp_path_factory.mktemp("bench")
    readme = root / "README.md"
    readme.write_text(
        "# bench\n\n<!-- results:start -->\nold results\n<!-- results:end -->\n\nend\n"
    )
    status = bench_run.main(
        [
            "--sf", "0.01",
            "--fractions", str(FRACTION),
            "--reps", "1",
            "--warmup-rounds", "0",
            "--scale-sfs", "",
            "--scale-fraction", str(FRACTION),
            "--base-write-mode", "merge-on-read",
            "--refresh", "incremental",  # every refresh runs the rules (auto may rebuild)
            # The twins read the change first; status_revenue_full reads an ivm model, so it
            # must be rebuilt again after the refresh for its check to pass.
            "--order", "table-first",
            "--steady", str(STEADY_ROUNDS),
            "--out", str(root / "out"),
            "--workdir", str(root / "work"),
            "--readme", str(readme),
            "--driver-memory", "4g",
            "--shuffle-partitions", "4",
        ]
    )  # fmt: skip
    log = (root / "work" / "bench.log").read_text()
    assert status == 0, f"the benchmark failed:\n{log}"
    results = json.loads((root / "out" / "results.json").read_text())
    return results, root / "out", readme


def test_every_model_has_medians_and_every_refresh_was_checked(
    tiny_run: tuple[dict[str, Any], Path, Path],
) -> None:
    results, _, _ = tiny_run
    assert results["status"] == "ok"
    summary = results["summary"]
    assert set(summary["by_fraction"]) == set(MODELS)
    for model in MODELS:
        (row,) = summary["by_fraction"][model]
        assert row["fraction"] == FRACTION
        assert row["ivm_median"] > 0 and row["full_median"] > 0, row
        assert row["ratio"] == pytest.approx(row["full_median"] / row["ivm_median"])
        assert summary["no_change"][model] > 0
        assert [r["sf"] for r in summary["by_scale"][model]] == [0.01]
    (run,) = results["runs"]
    # the build, the one change round and the last steady round, each model
    # against its table twin
    steady_rounds = run["steady"]["rounds"]
    found = [
        *run["build"]["checks"],
        *(c for r in [*run["rounds"], *steady_rounds] for c in r["checks"]),
    ]
    assert sorted(c["model"] for c in found) == sorted(MODELS * 3)
    assert all(c["ok"] and c["differing_rows"] == 0 and c["rows"] > 0 for c in found), found
    assert summary["checks"] == {"run": 3 * len(MODELS), "passed": 3 * len(MODELS)}
    (change_round,) = run["rounds"]
    assert change_round["first"] == "full" and results["settings"]["order"] == "table-first"
    for change in change_round["changes"]:
        assert change["inserted"] + change["updated"] + change["deleted"] > 0, change
    for model in MODELS:
        no_change = [inv["models"][model]["message"] for inv in run["no_change"]]
        assert all(m.startswith("no MERGE") for m in no_change), no_change
        message = change_round["ivm"]["models"][model]["message"]
        assert message.startswith("refreshed"), f"{model} was not refreshed: {message}"
        assert change_round["ivm"]["models"][model]["steps"], "no statement timings captured"
    assert not summary["rebuilt_during_refresh"]
    # where the time goes: every refresh captured, computed a delta and committed, and the
    # phases account for the model's whole execution time
    phases = summary["phases"][f"{FRACTION:g}"]
    for model in MODELS:
        split = phases[model]
        assert split["capture"] > 0 and split["delta"] > 0 and split["commit"] > 0, split
        assert "other" not in split, f"a refresh statement label without a phase: {split}"
        assert sum(split.values()) == pytest.approx(summary["by_fraction"][model][0]["ivm_median"])
    assert results["versions"]["spark"].startswith("3.5")
    tables = {t["name"]: t for t in run["load"]["tables"]}
    assert tables["lineitem"]["rows"] > 50_000 and tables["nations"]["rows"] == 25


def test_plots_and_markdown(tiny_run: tuple[dict[str, Any], Path, Path]) -> None:
    _, out, readme = tiny_run
    for name in ("refresh_vs_fraction.png", "refresh_vs_scale.png"):
        data = (out / name).read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 10_000, name
    text = readme.read_text()
    assert "old results" not in text and text.startswith("# bench\n") and text.endswith("\nend\n")
    for model in MODELS:
        assert re.search(
            # ... | full / ivm | ran as rebuild (none: --refresh incremental)
            rf"^\| {model} \| 1\.0% \| [0-9.]+ \| [0-9.]+ \| [0-9.]+x \| 0 of 1 \|$",
            text,
            re.MULTILINE,
        )
    assert f"{3 * len(MODELS)} of {3 * len(MODELS)} passed" in text
    assert "`--base-write-mode merge-on-read`" in text
    assert "`ivm_refresh=incremental`" in text
    assert "### Where a refresh spends its time" in text
    columns = len(figures.PHASES) + 1  # the phases and dbt
    for model in MODELS:
        assert re.search(rf"^\| {model} \| 1\.0%( \| [0-9.]+){{{columns}}} \|$", text, re.MULTILINE)


def test_the_check_sees_a_wrong_row(tiny_run: tuple[dict[str, Any], Path, Path]) -> None:
    """The equality check is not vacuous: one extra row in a table twin is a mismatch."""
    spark = SparkSession.builder.getOrCreate()
    twin = "bench.pricing_summary_full"
    assert checks.compare(spark, "pricing_summary", "bench.pricing_summary", twin).ok
    spark.sql(f"INSERT INTO {twin} SELECT * FROM {twin} LIMIT 1")
    found = checks.compare(spark, "pricing_summary", "bench.pricing_summary", twin)
    assert not found.ok and found.differing_rows == 1
    assert "'missing'" in found.problem


def test_merge_on_read_base_tables_and_steady_state(
    tiny_run: tuple[dict[str, Any], Path, Path],
) -> None:
    """The base tables took the changes as position delete files, and every steady-state round
    refreshed every model and recorded its state table's files; only the last one rebuilt
    the table twins and checked (STEADY_ROUNDS < options.STEADY_CHECK_EVERY)."""
    assert STEADY_ROUNDS < STEADY_CHECK_EVERY
    results, out, readme = tiny_run
    assert results["settings"]["base_write_mode"] == "merge-on-read"
    assert results["settings"]["steady"] == STEADY_ROUNDS
    (run,) = results["runs"]
    changed = {c["table"]: c for c in run["rounds"][0]["changes"]}
    lineitem = changed["lineitem"]
    assert lineitem["added_delete_files"] > 0 and lineitem["rewritten_files"] == 0, lineitem
    steady = run["steady"]
    assert steady["fraction"] == 0.001
    assert [r["round"] for r in steady["rounds"]] == list(range(1, STEADY_ROUNDS + 1))
    for r in steady["rounds"]:
        last = r["round"] == STEADY_ROUNDS
        assert (r["full"] is not None) == last and bool(r["checks"]) == last, r["round"]
        assert all(c["delete_files_after"] > 0 for c in r["changes"]), r["changes"]
        for model in MODELS:
            message = r["ivm"]["models"][model]["message"]
            assert message.startswith("refreshed"), f"{model} was not refreshed: {message}"
            state = r["state"][model]
            assert state["data_files"] >= 1 and state["snapshots"] >= 1, state
            assert state["delete_files"] >= 0 and state["records"] >= 1, state
            # the metadata.json files of the state stay bounded (sql/layout.BOUNDED_METADATA)
            assert 1 <= state["metadata_files"] <= METADATA_VERSIONS + 1, state
        # status_revenue reads nation_revenue's delta log: its files are counted too
        log = r["state"][f"nation_revenue{figures.LOG_KEY}"]
        assert log["snapshots"] >= 1 and 1 <= log["metadata_files"] <= METADATA_VERSIONS + 1, log
    s = results["summary"]["steady"]
    assert s["rounds"] == STEADY_ROUNDS and s["window"] == STEADY_ROUNDS
    assert s["checks"] == {"run": len(MODELS), "passed": len(MODELS)}
    for model in MODELS:
        row = s["models"][model]
        assert len(row["seconds"]) == STEADY_ROUNDS and row["first"] > 0 and row["last"] > 0
        assert row["ratio"] == pytest.approx(row["last"] / row["first"])
        assert len(row["delete_files"]["per_round"]) == STEADY_ROUNDS
    data = (out / plots.STEADY_PLOT).read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 10_000
    text = readme.read_text()
    assert "### Steady state, SF 0.01" in text and plots.STEADY_PLOT in text
    for model in MODELS:
        assert re.search(
            rf"^\| {model} \| [0-9.]+ \| [0-9.]+ \| [0-9.]+x( \| [0-9]+ / [0-9]+){{4}} \|$",
            text,
            re.MULTILINE,
        ), model
    log = f"nation_revenue{figures.LOG_KEY}"
    assert re.search(rf"^\| {log} \| - \| - \| -( \| [0-9]+ / [0-9]+){{4}} \|$", text, re.MULTILINE)


def _repeated_steady(results: dict[str, Any], count: int, slower_from: int) -> dict[str, Any]:
    """`results` with its one steady round repeated `count` times, nation_revenue twice as
    slow from round `slower_from` on, checked every STEADY_CHECK_EVERY rounds and after the
    last, as run.py does; its summary."""
    (run,) = results["runs"]
    template = run["steady"]["rounds"][0]
    rounds = []
    for number in range(1, count + 1):
        r = copy.deepcopy(template)
        r["round"] = number
        if number % STEADY_CHECK_EVERY and number != count:
            r["full"], r["checks"] = None, []
        for model in MODELS:
            slower = model == "nation_revenue" and number >= slower_from
            r["ivm"]["models"][model]["seconds"] = 2.0 if slower else 1.0
        rounds.append(r)
    run["steady"]["rounds"] = rounds
    return report.summarize(results)


def test_a_soak_compares_the_first_and_last_hundred(
    tiny_run: tuple[dict[str, Any], Path, Path],
) -> None:
    """From 200 rounds (`--steady 1000`, issue 39) the report compares the first and last
    hundred refreshes, and the state's files per round are kept."""
    results = copy.deepcopy(tiny_run[0])
    summary = _repeated_steady(results, 250, slower_from=151)
    steady = summary["steady"]
    assert steady["window"] == 100
    assert steady["models"]["nation_revenue"]["ratio"] == pytest.approx(2.0)
    for model in MODELS:
        assert len(steady["models"][model]["metadata_files"]["per_round"]) == 250
    results["summary"] = summary
    text = report.markdown(results, "out")
    assert "median refresh of rounds 1-100 and 151-250." in text
    assert "within 1.2x of the first 100 | 2.0x | **no** |" in text
    assert "--resume" not in text
    # a kill in round 120 and `--resume`: the report names the round an ordinary refresh
    # finished
    results["runs"][0]["steady"]["rounds"][119]["resumed"] = True
    results["summary"] = report.summarize(results)
    assert results["summary"]["steady"]["resumed"] == [120]
    assert "Round 120: the process was killed and `--resume` went on" in report.markdown(
        results, "out"
    )


def test_resume_needs_the_interrupted_run_with_the_same_options(tmp_path: Path) -> None:
    """`--resume` goes on only from a run in the work directory that stopped during its
    steady rounds, with the same options; anything else is refused before Spark starts."""
    first = ["--sf", "0.01", "--steady", "3", "--scale-sfs", "", "--workdir", str(tmp_path)]
    options = [*first, "--resume"]
    with pytest.raises(bench_run.BenchError, match="without a scale series"):
        bench_run.Benchmark(bench_run.parse_args([*options, "--scale-sfs", "0.1"]))
    with pytest.raises(bench_run.BenchError, match="no interrupted run"):
        bench_run.Benchmark(bench_run.parse_args(options))
    settings = bench_run.Benchmark(bench_run.parse_args(first)).results["settings"]
    partial = tmp_path / "results.partial.json"
    steady = {"fraction": 0.001, "rounds": [{"round": 1}]}
    found = {"settings": settings | {"seed": 7}, "runs": [{"sf": 0.01, "steady": steady}]}
    partial.write_text(json.dumps(found))
    with pytest.raises(bench_run.BenchError, match=r"options differ .*\['seed'\]"):
        bench_run.Benchmark(bench_run.parse_args(options))
    partial.write_text(json.dumps(found | {"settings": settings}))
    resumed = bench_run.Benchmark(bench_run.parse_args(options)).results
    assert resumed["runs"][0]["steady"]["rounds"] == [{"round": 1}]
    assert resumed["status"] == "running"
    steady["rounds"] *= 3
    partial.write_text(json.dumps(found | {"settings": settings}))
    with pytest.raises(bench_run.BenchError, match="done all its steady rounds"):
        bench_run.Benchmark(bench_run.parse_args(options))
    with pytest.raises(SystemExit):  # argparse: only a run with steady rounds resumes
        bench_run.parse_args([*first, "--steady", "0", "--resume"])


def test_steady_state_target(tiny_run: tuple[dict[str, Any], Path, Path]) -> None:
    """From 20 rounds on the report compares the last ten with the first ten (no Spark: the
    tiny run's steady round repeated, the later ones slower for one model; checked every
    STEADY_CHECK_EVERY rounds and after the last, as run.py does)."""
    results = copy.deepcopy(tiny_run[0])
    summary = _repeated_steady(results, 25, slower_from=16)
    steady = summary["steady"]
    assert steady["rounds"] == 25 and steady["window"] == figures.STEADY_WINDOW
    assert steady["models"]["nation_revenue"]["ratio"] == pytest.approx(2.0)
    assert steady["models"]["pricing_summary"]["ratio"] == pytest.approx(1.0)
    assert steady["checks"] == {"run": 3 * len(MODELS), "passed": 3 * len(MODELS)}
    met = {
        t["target"].split(":")[0]: t["met"] for t in summary["targets"] if "steady" in t["target"]
    }
    assert met == {m: m != "nation_revenue" for m in MODELS}
    results["summary"] = summary
    text = report.markdown(results, "out")
    assert "median refresh of rounds 1-10 and 16-25." in text
    assert re.search(r"^\| nation_revenue \| 1\.00 \| 2\.00 \| 2\.0x \|", text, re.MULTILINE)
    assert "within 1.2x of the first 10 | 2.0x | **no** |" in text


def test_base_table_ddl_write_mode() -> None:
    for mode in datagen.WRITE_MODES:
        ddl = datagen.LINEITEM_TABLE.ddl(mode)
        for op in ("delete", "update", "merge"):
            assert f"'write.{op}.mode' = '{mode}'" in ddl
    assert "merge-on-read" not in datagen.LINEITEM_TABLE.ddl()
    with pytest.raises(ValueError):
        datagen.LINEITEM_TABLE.ddl("append-only")  # type: ignore[arg-type]
    args = bench_run.parse_args([])
    assert (args.base_write_mode, args.steady, args.steady_fraction) == (
        "copy-on-write",
        0,
        0.001,
    )
