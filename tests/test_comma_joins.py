"""Comma joins (`compiler/frontend/comma_joins.py`): joins listed in FROM with their predicates in WHERE
are maintained as inner joins ON those predicates, so no refresh statement forms a product the
model's own query does not (TPC-H Q5, Q7, Q8, Q9 ran a refresh's bracket as a cartesian
product). Pure tests: the delta SQL the compiler renders, no Spark; the TPC-H family
(`test_tpch.py`) refreshes these shapes against Spark.
"""

from __future__ import annotations

import pytest
from sqlglot import exp
from support.delta_sql import delta_select

from dbt.adapters.spark_ivm.compiler.frontend.analyze import analyze

SCHEMAS = {
    "s.part": [("p_partkey", "bigint"), ("p_size", "int")],
    "s.supplier": [("s_suppkey", "bigint"), ("s_nationkey", "int")],
    "s.lineitem": [("l_partkey", "bigint"), ("l_suppkey", "bigint"), ("l_price", "double")],
    "s.nation": [("n_nationkey", "int"), ("n_name", "string")],
}
# TPC-H Q9's shape: the first two FROM items share no predicate
Q9_SHAPE = (
    "select n_name, sum(l_price) from part, supplier, lineitem, nation "
    "where s_suppkey = l_suppkey and p_partkey = l_partkey and s_nationkey = n_nationkey "
    "and p_size = 15 group by n_name"
)


def _steps(text: str) -> list[tuple[str, str, str]]:
    q = analyze(text, "m", SCHEMAS, "s")
    return [(s.kind.value, q.inputs[s.index].alias, s.on.sql("spark")) for s in q.steps]


def test_inputs_are_ordered_so_every_join_has_a_predicate():
    assert _steps(Q9_SHAPE) == [
        ("inner", "lineitem", "part.p_partkey = lineitem.l_partkey"),
        ("inner", "supplier", "supplier.s_suppkey = lineitem.l_suppkey"),
        ("inner", "nation", "supplier.s_nationkey = nation.n_nationkey"),
    ]
    q = analyze(Q9_SHAPE, "m", SCHEMAS, "s")
    assert q.where is not None and q.where.sql("spark") == "part.p_size = 15"


@pytest.mark.parametrize(
    "changed",
    [{"supplier", "nation"}, {"part", "supplier", "lineitem", "nation"}, {"nation"}],
)
def test_no_delta_join_lacks_a_predicate(changed: set[str]):
    """Every join of every term (and of a factored bracket) has an ON with an equality."""
    select = delta_select(Q9_SHAPE, SCHEMAS, changed)
    joins = list(select.find_all(exp.Join))
    assert joins
    for join in joins:
        on = join.args.get("on")
        assert on is not None and on.find(exp.EQ) is not None, join.sql("spark")
        assert not (isinstance(on, exp.Boolean) and on.this), join.sql("spark")


def test_a_join_key_repeated_in_every_branch_of_an_or_is_a_join_predicate():
    """TPC-H Q19: `(p = l AND a) OR (p = l AND b)` == `p = l AND (a OR b)`."""
    q = analyze(
        "select sum(l_price) from lineitem, part where "
        "(p_partkey = l_partkey and p_size = 1) or (l_partkey = p_partkey and p_size = 2)",
        "m",
        SCHEMAS,
        "s",
    )
    assert [s.on.sql("spark") for s in q.steps] == ["part.p_partkey = lineitem.l_partkey"]
    assert q.where is not None
    assert q.where.sql("spark") == "part.p_size = 1 OR part.p_size = 2"


def test_a_predicate_without_an_equality_is_an_on_too():
    """Not an equi-join (the query's own product, filtered), exact in the ON of an inner
    join; a predicate of one input stays in WHERE."""
    q = analyze(
        "select l_price from lineitem, part where (p_partkey = l_partkey or p_size = 1) "
        "and l_price > 0",
        "m",
        SCHEMAS,
        "s",
    )
    assert [s.on.sql("spark") for s in q.steps] == [
        "part.p_partkey = lineitem.l_partkey OR part.p_size = 1"
    ]
    assert q.where is not None and q.where.sql("spark") == "lineitem.l_price > 0"


def test_left_joins_after_the_comma_joins_keep_their_place():
    """TPC-H Q21 after its EXISTS tests became LEFT joins with their states."""
    left = (
        "select l_price from part, lineitem left join supplier on s_suppkey = l_suppkey "
        "where p_partkey = l_partkey and s_nationkey is null"
    )
    assert _steps(left) == [
        ("inner", "lineitem", "part.p_partkey = lineitem.l_partkey"),
        ("left", "supplier", "supplier.s_suppkey = lineitem.l_suppkey"),
    ]
    q = analyze(left, "m", SCHEMAS, "s")
    assert q.where is not None and q.where.sql("spark") == "supplier.s_nationkey IS NULL"


def test_an_inner_join_after_a_left_join_keeps_its_place_too():
    """TPC-H Q16 after its NOT IN became a LEFT join with a DISTINCT state and an inner join
    with its one-row flag: `partsupp, part` still joins ON its key (the affected keys of the
    LEFT join were a product of partsupp and part's change log without it)."""
    chain = (
        "select l_price from part, lineitem left join supplier on s_suppkey = l_suppkey "
        "join nation on n_nationkey = 1 where p_partkey = l_partkey"
    )
    assert _steps(chain) == [
        ("inner", "lineitem", "part.p_partkey = lineitem.l_partkey"),
        ("left", "supplier", "supplier.s_suppkey = lineitem.l_suppkey"),
        ("inner", "nation", "nation.n_nationkey = 1"),
    ]


def test_chains_with_a_right_join_or_only_explicit_joins_are_left_as_written():
    """A RIGHT JOIN pads the comma join before it: its predicate stays in the WHERE. (With
    `p_partkey = l_partkey`, which rejects the padded rows, the RIGHT JOIN is inner and the
    predicate is placed: `null_rejection.py`.)"""
    right = (
        "select l_price from part, lineitem right join supplier on s_suppkey = l_suppkey "
        "where (p_partkey = l_partkey or s_suppkey is null)"
    )
    assert _steps(right)[0] == ("inner", "lineitem", "TRUE")
    assert _steps(
        right.replace("(p_partkey = l_partkey or s_suppkey is null)", "p_partkey = l_partkey")
    ) == [
        ("inner", "lineitem", "part.p_partkey = lineitem.l_partkey"),
        ("inner", "supplier", "supplier.s_suppkey = lineitem.l_suppkey"),
    ]
    explicit = (
        "select l_price from part join supplier on p_size = s_nationkey "
        "join lineitem on l_suppkey = s_suppkey where p_partkey = l_partkey"
    )
    assert [a for _, a, _ in _steps(explicit)] == ["supplier", "lineitem"]
