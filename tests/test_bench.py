"""The benchmark (bench/) at SF 0.01, so that it cannot rot: it runs in this process on the
shared Spark, refreshes really refresh, every refresh is checked against its table twin, and
the JSON, the plots and the markdown table come out."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from bench import checks, report
from bench import run as bench_run

MODELS = ("pricing_summary", "nation_revenue", "customer_orders", "nation_segments")
FRACTION = 0.01
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path, Path]:
    """One benchmark run: SF 0.01, 1 % changed, 1 repetition, no scale series."""
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
    # the build and the one change round, each of the 4 models against its table twin
    found = run["build"]["checks"] + [c for r in run["rounds"] for c in r["checks"]]
    assert sorted(c["model"] for c in found) == sorted(MODELS * 2)
    assert all(c["ok"] and c["differing_rows"] == 0 and c["rows"] > 0 for c in found), found
    assert summary["checks"] == {"run": 8, "passed": 8}
    (change_round,) = run["rounds"]
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
            rf"^\| {model} \| 1\.0% \| [0-9.]+ \| [0-9.]+ \| [0-9.]+x \|$", text, re.MULTILINE
        )
    assert "8 of 8 passed" in text
    assert "### Where a refresh spends its time" in text
    columns = len(report.PHASES) + 1  # the phases and dbt
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
