"""The sub-query shapes TPC-H needs, as the compiler cuts them into states (pure, no Spark).

What each rule keeps and why it is exact is in its module's docstring; the differential
families `top_k_comma_join`, `having_subqueries`, `exists_inequality` and `exists_ranges` and the TPC-H family
(`test_tpch.py`) check the results against Spark.
"""

from __future__ import annotations

import pytest

from dbt.adapters.spark_ivm.compiler import dataflow
from dbt.adapters.spark_ivm.compiler.errors import UnsupportedQueryError
from dbt.adapters.spark_ivm.compiler.frontend import stages
from dbt.adapters.spark_ivm.compiler.operators import top_k
from dbt.adapters.spark_ivm.compiler.relations import Target

SCHEMAS = {
    "db.t": [("k", "int"), ("x", "int")],
    "db.u": [("k", "int"), ("y", "int")],
}


def _prepared(sql: str) -> tuple[list[str], str]:
    """The state SELECTs (innermost first) and the model's SELECT over them."""
    tree = stages.prepare(sql, "m", SCHEMAS, "db")
    flow = dataflow.cut(tree, Target("db", "m"), "m")
    views = dict.fromkeys(range(len(flow.states)), "SELECT 1 AS k0 FROM db.v")  # stand-ins
    return [s.sql(views) for s in flow.sub_queries], flow.top.sql(views)


def test_a_having_with_a_sub_query_filters_the_aggregate_kept_as_a_state():
    """TPC-H Q11: the groups are a state; the HAVING re-tests them against the scalar."""
    states, model = _prepared(
        "select t.k, sum(t.x) as s from t group by t.k "
        "having sum(t.x) > (select 0.5 * sum(u.y) from u) and t.k > 0"
    )
    assert states == [
        (
            "SELECT t.k AS k, SUM(t.x) AS s, SUM(t.x) AS __ivm_h0, t.k AS __ivm_h1 "
            "FROM db.t AS t GROUP BY t.k"
        ),
        "SELECT SUM(u.y) AS v FROM db.u AS u",
    ]
    assert model.endswith(
        "WHERE ivm_having.__ivm_h0 > 0.5 * ivm_scalar0.v AND ivm_having.__ivm_h1 > 0"
    )


def test_a_scalar_sub_query_may_be_an_expression_of_its_aggregates():
    """TPC-H Q17: the state keeps avg per key; `0.2 * v` is computed on the joined row, so
    over no rows it is what the sub-query is (0.2 * NULL); a count is 0 there."""
    _, model = _prepared(
        "select t.k from t where t.x < (select 0.2 * avg(u.y) from u where u.k = t.k) "
        "and t.x > (select count(*) - 1 from u where u.k = t.x)"
    )
    assert "t.x < 0.2 * ivm_scalar0.v" in model
    assert "t.x > COALESCE(ivm_scalar1.v, 0) - 1" in model


def test_in_over_a_grouped_sub_query_reads_it_as_a_state():
    """TPC-H Q18: `IN (SELECT .. GROUP BY .. HAVING ..)`; correlated, the key joins the
    GROUP BY (filtering by k then grouping is grouping by k too)."""
    states, _ = _prepared(
        "select t.k from t where t.k in (select u.k from u group by u.k having sum(u.y) > 3)"
    )
    assert states == [
        "SELECT u.k AS c FROM db.u AS u GROUP BY u.k HAVING SUM(u.y) > 3",
        "SELECT DISTINCT ivm_grouped.c AS k0 FROM (SELECT 1 AS k0 FROM db.v) AS ivm_grouped",
    ]
    states, _ = _prepared(
        "select t.k from t where exists (select 1 from u where u.y = t.x group by u.k "
        "having count(*) > 1)"
    )
    assert states[0] == (
        "SELECT 1 AS c, u.y AS k0 FROM db.u AS u GROUP BY u.k, u.y HAVING COUNT(*) > 1"
    )


@pytest.mark.parametrize(
    ("comparison", "test"),
    [
        ("u.y <> t.x", "COALESCE(ivm_scalar0.v <> t.x OR ivm_scalar0.v1 <> t.x, FALSE)"),
        ("u.y < t.x", "COALESCE(ivm_scalar0.v < t.x, FALSE)"),
        ("t.x <= u.y", "COALESCE(ivm_scalar0.v >= t.x, FALSE)"),
    ],
)
def test_exists_with_one_comparison_tests_a_min_or_max_per_key(comparison: str, test: str):
    """TPC-H Q21: EXISTS (.. k = k' AND y <> x) is min(y) <> x OR max(y) <> x per key."""
    states, model = _prepared(
        f"select t.k from t where exists (select 1 from u where u.k = t.k and {comparison}) "
        f"and not exists (select 1 from u where u.k = t.k and {comparison} and u.y > 0)"
    )
    assert states[0].startswith("SELECT u.k AS k0, ")
    assert states[0].endswith("FROM db.u AS u GROUP BY u.k")
    assert f"WHERE {test} AND NOT {test.replace('scalar0', 'scalar1')}" in model


def test_exists_with_an_equality_and_more_comparisons_keeps_the_matched_outer_values():
    """`EXISTS (.. u.k = t.k AND u.y > t.x AND u.y < t.x + 5)`: the state is the DISTINCT
    (k, x) of t that have a match, joined from t's own copy by the equality, so a change
    of u recomputes the outer values of its keys only."""
    states, model = _prepared(
        "select t.k from t where exists (select 1 from u where u.k = t.k and u.y > t.x "
        "and u.y < t.x + 5) and not exists (select 1 from u where u.k = t.x and u.y "
        "between t.k and t.x)"
    )
    assert states == [
        (
            "SELECT DISTINCT ivm_theta0.k AS k0, ivm_theta0.x AS k1 FROM db.u AS u "
            "JOIN db.t AS ivm_theta0 ON u.k = ivm_theta0.k AND u.y > ivm_theta0.x "
            "AND u.y < ivm_theta0.x + 5"
        ),
        (
            "SELECT DISTINCT ivm_theta1.x AS k0, ivm_theta1.k AS k1 FROM db.u AS u "
            "JOIN db.t AS ivm_theta1 ON u.k = ivm_theta1.x AND u.y BETWEEN ivm_theta1.k "
            "AND ivm_theta1.x"
        ),
    ]
    assert model.endswith(
        "JOIN (SELECT 1 AS k0 FROM db.v) AS ivm_semi0 ON ivm_semi0.k0 = t.k AND "
        "ivm_semi0.k1 = t.x LEFT JOIN (SELECT 1 AS k0 FROM db.v) AS ivm_semi1 ON "
        "ivm_semi1.k0 = t.x AND ivm_semi1.k1 = t.k WHERE ivm_semi1.k0 IS NULL"
    )


def test_top_k_keeps_the_unlimited_select_and_orders_the_view_by_result_columns():
    top = top_k.split(
        "SELECT t.k AS k, SUM(t.x) AS s FROM db.t AS t GROUP BY t.k ORDER BY SUM(t.x) DESC, "
        "k NULLS LAST LIMIT 3",
        "m",
    )
    assert top.inner == "SELECT t.k AS k, SUM(t.x) AS s FROM db.t AS t GROUP BY t.k"
    assert top.suffix == " ORDER BY `s` DESC, `k` NULLS LAST LIMIT 3"
    by_position = top_k.split("SELECT t.k AS k, t.x AS x FROM db.t AS t ORDER BY 2, 1 LIMIT 1", "m")
    assert by_position.suffix == " ORDER BY `x`, `k` LIMIT 1"
    plain = top_k.split("SELECT t.k FROM db.t AS t ORDER BY t.k", "m")
    assert plain.suffix == "" and plain.limited("V") == "V"


@pytest.mark.parametrize(
    ("sql", "construct"),
    [
        ("SELECT t.k FROM db.t AS t ORDER BY t.x LIMIT 3", "not a result column"),
        ("SELECT * FROM db.t AS t ORDER BY t.x LIMIT 3", "SELECT *"),
    ],
)
def test_top_k_over_what_the_view_cannot_order_is_refused(sql: str, construct: str):
    with pytest.raises(UnsupportedQueryError, match=construct):
        top_k.split(sql, "m")


def test_a_comparison_beside_a_range_is_not_taken_for_the_min_max_test():
    """`u.y BETWEEN t.x AND t.k AND u.k > t.x` is two conditions beyond the equality: the
    MIN / MAX test would leave the BETWEEN correlated inside its scalar sub-query."""
    states, _ = _prepared(
        "select t.k from t where not exists (select 1 from u where u.k = t.k "
        "and u.y between t.x - 2 and t.x + 2 and u.k > t.x)"
    )
    assert states[0].startswith("SELECT DISTINCT ivm_theta0.k AS k0, ivm_theta0.x AS k1 FROM")
