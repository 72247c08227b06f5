"""UNION ALL / UNION (issue 13, item 1): what is one state fed by several branches, and the
set operations no rule keeps exact, refused by name (no Spark: analysis only). The
differential families `union_*` check the results against Spark."""

from __future__ import annotations

import pytest

from dbt.adapters.spark_ivm.compiler.analyze import analyze
from dbt.adapters.spark_ivm.compiler.errors import UnsupportedQueryError
from dbt.adapters.spark_ivm.compiler.plan import Shape, plan

SCHEMAS = {
    "db.t": [("k", "string"), ("x", "int")],
    "db.u": [("k", "string"), ("y", "bigint")],
}
OUT = [("k", "string"), ("x", "bigint")]


@pytest.mark.parametrize(
    ("select", "branches", "shape"),
    [
        ("select k, x from t union all select k, y from u", 2, Shape.BAG),
        # a chain of UNION ALL, a CTE shared by the branches, a branch in parentheses
        (("with f as (select * from t where x > 0) select k, x from f "
         "union all (select k, y from u) union all select k, x + 1 from f"), 3, Shape.BAG),
        ("select k, x from t union select k, y from u", 2, Shape.DISTINCT),
        # under UNION, a nested UNION ALL is part of the same DISTINCT
        ("select k, x from t union (select k, y from u union all select k, x from t)",
         3, Shape.DISTINCT),
    ],
)  # fmt: skip
def test_a_union_is_one_state_over_its_flat_branches(select: str, branches: int, shape: Shape):
    query = analyze(select, "m", SCHEMAS, "db")
    assert len(query.branches) == branches
    assert query.relations == ["db.t", "db.u"]
    the_plan = plan(query, OUT, [])
    assert the_plan.shape is shape and len(the_plan.branches) == branches
    assert all(b.key_columns == the_plan.key_columns for b in the_plan.branches)


@pytest.mark.parametrize(
    ("select", "construct"),
    [
        ("select k from t intersect select k from u", "set operation INTERSECT"),
        ("select k from t except select k from u", "set operation EXCEPT"),
        ("select k from t union all (select k from t union select k from u)",
         "a UNION inside a UNION ALL"),
        ("select k, count(*) from t group by k union all select k, y from u",
         "a UNION branch that aggregates"),
        ("select distinct k from t union all select k from u", "a UNION branch that"),
        ("select k from t union all select k, y from u", "different numbers of columns"),
        ("select k from t union all select k from u limit 2", "LIMIT"),
        ("select s.k, count(*) from (select k from t union all select k from u) s group by s.k",
         "UNION ALL / INTERSECT / EXCEPT inside a query"),
    ],
)  # fmt: skip
def test_set_operations_no_rule_keeps_exact_are_refused_by_name(select: str, construct: str):
    with pytest.raises(UnsupportedQueryError, match=construct):
        analyze(select, "m", SCHEMAS, "db")


def test_reading_a_bag_ivm_model_is_refused_by_name():
    """A model over a UNION ALL (or plain SELECT) ivm model reads its view, which repeats
    each state row `__ivm_count__` times: refused naming that, not the generator."""
    schemas = {"db.up__ivm_state": [("__ivm_row__", "int"), ("__ivm_k0", "string"),
                                    ("__ivm_count__", "bigint")]}  # fmt: skip
    view = (
        "select cast(__ivm_k0 as string) as k from db.up__ivm_state lateral view "
        "explode(array_repeat(0, cast(__ivm_count__ as int))) r as i where __ivm_row__ = 0"
    )
    with pytest.raises(UnsupportedQueryError, match="an ivm model that keeps a bag of rows"):
        analyze(f"select u.k, count(*) as n from ({view}) u group by u.k", "m", schemas, "db")
