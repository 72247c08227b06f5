"""A dbt project run in a Python process of its own, for what one process's Spark cannot be:
a session whose driver is on a cluster, or whose default catalog is another one (a process
has one Spark, and the test process's is the embedded one).

A script (`session_on_cluster.py`, `session_named_catalog.py`) writes its project with
`write_project`, runs dbt through the function it returns and prints one `RESULT <json>`
line; the test runs the script with `run_script` and asserts on that JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dbt.cli.main import dbtRunner

#: Two Iceberg base tables in schema `src` and their rows (the scripts' models join them).
SHOP_TABLES = (
    "CREATE DATABASE IF NOT EXISTS src",
    "CREATE TABLE src.orders (oid int, cust int, amount decimal(10,2)) USING iceberg",
    "CREATE TABLE src.customers (cid int, segment string) USING iceberg",
    "INSERT INTO src.orders VALUES (1, 1, 10.00), (2, 1, 5.50), (3, 2, 7.25), (4, 3, 1.00)",
    "INSERT INTO src.customers VALUES (1, 'a'), (2, 'b'), (3, 'b')",
)
#: A change of both tables: a group's maximum deleted, rows inserted, a customer moved.
SHOP_CHANGES = (
    "DELETE FROM src.orders WHERE oid = 1",
    "INSERT INTO src.orders VALUES (5, 2, 99.99), (6, 4, 3.00)",
    "INSERT INTO src.customers VALUES (4, 'c')",
    "UPDATE src.customers SET segment = 'a' WHERE cid = 3",
)


def write_project(
    root: Path, name: str, output: dict[str, Any], models: dict[str, str], tested: list[str]
) -> Callable[..., dict[str, Any]]:
    """`dbt_project.yml`, `profiles.yml` (`output` as its one target) and the ivm `models`
    (name -> SELECT), those in `tested` with `ivm_consistent`; returns `dbt(*args)`, which
    runs dbt in this process and says what it did."""
    (root / "models").mkdir(parents=True, exist_ok=True)
    (root / "dbt_project.yml").write_text(
        f"name: {name}\nversion: '1.0'\nconfig-version: 2\nprofile: {name}\n"
    )
    profile = {name: {"target": "dev", "outputs": {"dev": output}}}
    (root / "profiles.yml").write_text(json.dumps(profile))
    for model, select in models.items():
        (root / "models" / f"{model}.sql").write_text("{{ config(materialized='ivm') }}\n" + select)
    schema = {
        "version": 2,
        "models": [{"name": m, "data_tests": ["ivm_consistent"]} for m in tested],
    }
    (root / "models" / "schema.yml").write_text(json.dumps(schema))
    runner = dbtRunner()

    def dbt(*args: str) -> dict[str, Any]:
        res = runner.invoke([*args, "--project-dir", str(root), "--profiles-dir", str(root)])
        results = getattr(res.result, "results", None) or []
        return {
            "success": bool(res.success),
            "messages": [str(r.message) for r in results],
            "statuses": [str(getattr(r.status, "value", r.status)) for r in results],
            "error": None if res.exception is None else str(res.exception),
        }

    return dbt


def run_script(script: str, *args: str, cwd: Path, timeout: int = 900) -> dict[str, Any]:
    """Run `tests/<script>` with `args` in a process of its own; the JSON of its last
    `RESULT` line (fails with the process's output when it printed none or exited badly)."""
    path = Path(__file__).resolve().parent.parent / script
    proc = subprocess.run(
        [sys.executable, str(path), *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, (
        f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    return json.loads(lines[-1].removeprefix("RESULT "))
