"""Spark settings every test Spark gets: embedded sessions, the loopback cluster's Thrift server
and its executors.

The tests' tables hold tens of rows, so a statement's time is the JVM's own work, not the
data's. Measured on `tests/test_min_max_lists.py` (7 dbt runs, one process, 2 cores), the
JVM's JIT compiler threads used 73 of its ~105 CPU seconds: HotSpot's C2 compiling Catalyst
and the Java classes whole-stage code generation makes for every statement (48,000
compilations in two minutes). Without generated code (`wholeStage` off, expressions
interpreted) and with C1 as the only JIT tier, that test's JVM used 123 CPU seconds instead
of 184; two test processes share two cores, so CPU seconds are what the suite's time is made
of.

Interpreted expressions are Spark's own fallback path for code generation (its test suites
run both); a model's results do not depend on which one ran, and the benchmark (`bench/`),
where the data is large, runs with Spark's defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: SQL settings (they also apply to a running session: dbt-spark sets them per statement).
SQL_SETTINGS: dict[str, str] = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}
#: HotSpot options of the test JVMs (driver and executors): C1 only.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1"


def session_settings(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """`server_side_parameters` of a test profile with `method: session`: `extra` (the
    test's own settings) plus the SQL settings and the driver's and executors' JVM options
    (appended to any the test sets)."""
    settings = {**SQL_SETTINGS, **(extra or {})}
    for key in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
        settings[key] = f"{settings.get(key, '')} {JVM_OPTIONS}".strip()
    return settings


def with_session_settings(output: dict[str, Any]) -> dict[str, Any]:
    """A profile output (`method: session`) with :func:`session_settings` merged into its
    `server_side_parameters`."""
    return {
        **output,
        "server_side_parameters": session_settings(output.get("server_side_parameters")),
    }
