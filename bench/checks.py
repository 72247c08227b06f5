"""Is an ivm model equal to its table twin? Column names and types, and rows as bags.

The rows are compared with the plugin's own `ivm_consistent` SQL (EXCEPT ALL both ways;
float/double columns paired and compared within a relative 1e-9; decimals exact), with the
table model, a fresh `CREATE TABLE AS SELECT` of the same query, as the expected side.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from dbt.adapters.spark_ivm.compiler.sql.equality import consistency_sql

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Differing rows shown in a failure message.
SHOWN_ROWS = 10


@dataclass(frozen=True)
class Check:
    """One comparison of an ivm model with its table twin."""

    model: str
    ok: bool
    rows: int
    differing_rows: int
    problem: str
    seconds: float

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


class Mismatch(RuntimeError):
    """An ivm model differs from its table twin: the benchmark's figures are void."""


def compare(spark: SparkSession, model: str, ivm_relation: str, table_relation: str) -> Check:
    """Compare `ivm_relation` with `table_relation` (never raises for a difference)."""
    start = time.perf_counter()
    actual, expected = spark.table(ivm_relation), spark.table(table_relation)
    got = [(f.name, f.dataType.simpleString()) for f in actual.schema.fields]
    want = [(f.name, f.dataType.simpleString()) for f in expected.schema.fields]
    rows = expected.count()
    if got != want:
        problem = f"columns differ: {ivm_relation} has {got}, {table_relation} has {want}"
        return Check(model, False, rows, -1, problem, time.perf_counter() - start)
    diff = spark.sql(consistency_sql(ivm_relation, f"SELECT * FROM {table_relation}", want))
    differing = diff.count()
    problem = ""
    if differing:
        shown = "\n".join(f"  {tuple(r)}" for r in diff.limit(SHOWN_ROWS).collect())
        problem = (
            f"{differing} rows differ between {ivm_relation} and {table_relation} "
            f"('missing': only in the table, 'extra': only in the ivm model):\n{shown}"
        )
    return Check(model, not differing, rows, differing, problem, time.perf_counter() - start)
