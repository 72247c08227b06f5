"""Each outer step's affected keys computed once (`optimize/shared_keys.py`), without Spark.

The differential families with several outer steps (`exists_inequality`, `scalar_subqueries`,
`cte_filtered_joins`, TPC-H Q21/Q22) prove the refreshed relations against Spark; these pin
what the rewrite does to the statement the compiler writes.
"""

from __future__ import annotations

from sqlglot import exp
from support.delta_sql import delta_select

from dbt.adapters.spark_ivm.compiler.operators.outer_join import KEYS
from dbt.adapters.spark_ivm.compiler.optimize import shared_keys

SCHEMAS = {
    "s.a": [("k", "int"), ("x", "int")],
    "s.b": [("k", "int"), ("y", "int")],
    "s.c": [("k", "int"), ("z", "int")],
    "s.d": [("k", "int"), ("w", "int")],
}


def _computed_once(select: exp.Expression) -> list[list[int]]:
    """Run the runtime's loop (`runtime/precompute.py`) with stand-in relations; the copies
    each round replaced."""
    rounds: list[list[int]] = []
    n = 0
    while found := shared_keys.innermost(select):
        rounds.append([len(copies) for copies in found])
        for copies in found:
            shared_keys.read_from(copies, exp.to_table(f"keys_{n}"))
            n += 1
    return rounds


def test_keys_behind_outer_steps_are_computed_once_and_the_statement_stays_linear():
    text = (
        "select a.k, a.x, b.y, c.z, d.w from a join b on a.k = b.k "
        "left join c on c.k = a.k left join d on d.k = a.k"
    )
    select = delta_select(text, SCHEMAS, {"a", "b", "c", "d"})
    before = len(select.sql(dialect="spark"))
    rounds = _computed_once(select)
    after = select.sql(dialect="spark")
    # one K per outer step, innermost first, each read by several terms
    assert [len(r) for r in rounds] == [1, 1]
    assert all(copies > 1 for r in rounds for copies in r)
    # no K copy is left inline: every padded term reads a computed relation
    assert not [s for s in select.find_all(exp.Subquery) if s.alias == KEYS]
    # each K is read where its own step reads it: the filter on the outer side and the slice
    # of the inner side, at both versions
    assert [after.count(f"keys_{n}") for n in range(2)] == [4, 4]
    assert len(after) * 3 < before


def test_keys_of_change_logs_alone_stay_inline():
    """One LEFT JOIN of two tables: K is the keys of two logs, cheaper read where it stands
    than computed by one more job."""
    select = delta_select("select a.k, c.z from a left join c on c.k = a.k", SCHEMAS, {"a", "c"})
    assert _computed_once(select) == []
    assert [s for s in select.find_all(exp.Subquery) if s.alias == KEYS]
