"""The dbt-spark-ivm demo in one command (one Python process, so Spark starts once).

    python integration_project/demo.py        # from the repo root, or from anywhere

Steps: seed the Iceberg base tables, build the ivm models and the staging views they read
(full refresh), show them, then twice: change the base tables (INSERT/UPDATE/DELETE via `dbt run-operation change_shop_data`;
the first time, `dbt run-operation ivm_explain` shows how revenue_by_nation is maintained and that its inputs wait with a change),
refresh the models incrementally (`dbt run`), show what changed and run the `ivm_consistent`
tests. Exits non-zero as soon as a step fails.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from dbt.cli.main import dbtRunner

PROJECT_DIR = Path(__file__).resolve().parent
MODELS = [
    "customer_order_totals",
    "daily_revenue",
    "overall_totals",
    "revenue_by_nation",
    "distinct_order_nations",
    "customer_order_counts",
    "int_customer_revenue",
    "revenue_by_region",
    "orders_by_segment",
    "top_orders_per_customer",
    "money_movements",
]

runner = dbtRunner()
started = time.time()


def header(title: str) -> None:
    print(f"\n{'=' * 100}\n== {title}\n{'=' * 100}", flush=True)


def fail(message: str) -> None:
    print(f"\nDEMO FAILED: {message}  ({time.time() - started:.0f}s)", flush=True)
    sys.exit(1)


def dbt(*args: str):
    """Run one dbt command in-process; stop the demo if it fails."""
    print(f"\n$ dbt {' '.join(args)}", flush=True)
    t = time.time()
    res = runner.invoke(
        [*args, "--project-dir", str(PROJECT_DIR), "--profiles-dir", str(PROJECT_DIR)]
    )
    print(f"-- dbt {args[0]}: {'OK' if res.success else 'FAILED'} in {time.time() - t:.1f}s", flush=True)
    if res.exception is not None:
        fail(f"dbt {' '.join(args)} raised {res.exception!r}")
    if not res.success:
        for r in getattr(res.result, "results", None) or []:
            if str(r.status) not in ("success", "pass"):
                print(f"   {r.node.name}: {r.status}: {r.message}")
        fail(f"dbt {' '.join(args)} failed")
    return res


def model_results(res, *expect: str) -> None:
    """Print every model's result message; each ivm model's must start with one of `expect`
    (the staging views and customer_dim are re-created by every run)."""
    print("\nresult per model:")
    bad = []
    for r in sorted(res.result.results, key=lambda r: r.node.name):
        print(f"   {r.node.name:<24} {r.execution_time:5.1f}s  {r.message}")
        if r.node.name in MODELS and not str(r.message).startswith(expect):
            bad.append(r.node.name)
    if bad:
        fail(f"expected every model's message to start with one of {expect}, these did not: {bad}")


def test_results(res) -> None:
    print("\ntest results:")
    for r in sorted(res.result.results, key=lambda r: r.node.name):
        print(f"   {str(r.status).upper():<5} {r.node.name}")
    if len(res.result.results) != len(MODELS):
        fail(f"expected {len(MODELS)} ivm_consistent tests, ran {len(res.result.results)}")


def show(*models: str) -> None:
    dbt("run-operation", "show_shop_models", "--args", f"{{models: [{', '.join(models)}]}}", "--quiet")


header("1. seed the Iceberg base tables (nations, customers, orders)")
dbt("seed", "--full-refresh")

header("2. build every ivm model from scratch")
model_results(dbt("run", "--full-refresh"), "built")

header("3. the models after the build")
show(*MODELS)

header("4. dbt run without any base-table change: nothing to do")
model_results(dbt("run"), "no MERGE")

for round_ in (1, 2):
    n = 5 + 2 * (round_ - 1)
    header(f"{n}. change the base tables, round {round_}")
    dbt("run-operation", "change_shop_data", "--args", f"{{round: {round_}}}")
    if round_ == 1:
        # how the mart is maintained, and which of its inputs now wait with a change
        dbt("run-operation", "ivm_explain", "--args", "{model: revenue_by_nation}")

    header(f"{n + 1}. incremental refresh (round {round_}) and consistency tests")
    # a change that does not affect a model's rows is "no MERGE"; a rebuild ("built") is a failure
    model_results(dbt("run"), "refreshed", "no MERGE")
    show(
        "revenue_by_nation", "daily_revenue", "revenue_by_region", "orders_by_segment",
        "top_orders_per_customer",
    )
    test_results(dbt("test"))

header(f"DEMO PASSED in {time.time() - started:.0f}s")
