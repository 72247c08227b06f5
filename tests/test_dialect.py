"""Spark aggregate functions that sqlglot parses as anonymous calls (`compiler/sql/dialect.py`).

Before, `select mean(x) from t` analysed as a plain SELECT of one column per row (no
aggregate), and `mean(x)` beside a GROUP BY as a column that is not grouped. No Spark needed.
"""

from __future__ import annotations

import pytest

from dbt.adapters.spark_ivm.compiler.frontend.analyze import analyze
from dbt.adapters.spark_ivm.compiler.ir import AggKind

SCHEMAS = {"db.t": [("g", "int"), ("x", "double"), ("b", "boolean")]}


@pytest.mark.parametrize(
    ("select", "kinds"),
    [
        ("select mean(x) as m from db.t", [AggKind.AVG]),
        ("select g, mean(x) as m from db.t group by g", [AggKind.AVG]),
        ("select g, std(x) as s from db.t group by g", [AggKind.MOMENT]),
        ("select variance(x) v, stddev_pop(x) s from db.t", [AggKind.MOMENT, AggKind.MOMENT]),
        ("select every(b) as e, any(b) as a, some(b) as s from db.t", [AggKind.RECOMPUTE] * 2),
        (
            "select g, try_sum(x) as s, try_avg(x) as a from db.t group by g",
            [AggKind.RECOMPUTE] * 2,
        ),
        ("select stddev(distinct x) as s from db.t", [AggKind.RECOMPUTE]),
    ],
)
def test_spark_aggregates_are_aggregates(select: str, kinds: list[AggKind]):
    query = analyze(select, "m", SCHEMAS, "db")
    assert query.is_aggregate
    assert [a.kind for a in query.aggregates] == kinds


def test_any_and_bool_or_are_one_aggregate():
    # `any(b)` is Spark's bool_or: one aggregate with `bool_or(b)`
    query = analyze("select any(b) as a, bool_or(b) as o from db.t", "m", SCHEMAS, "db")
    assert [a.call.sql("spark") for a in query.aggregates] == ["BOOL_OR(t.b)"]
