"""Outer steps' affected keys read by name, computed once (`operators/outer_join.py`,
`runtime/precompute.py`), without Spark.

The differential families with several outer steps (`cte_filtered_joins`,
`cte_bracketed_left`, the NOT EXISTS / NOT IN families, TPC-H Q21/Q22) prove the refreshed
relations against Spark; these pin the shape of the statement the compiler writes.
"""

from __future__ import annotations

from sqlglot import exp
from support.delta_sql import planned, renderer_for

from dbt.adapters.spark_ivm.compiler import render
from dbt.adapters.spark_ivm.compiler.operators.outer_join import KEYS, SHARED_KEYS
from dbt.adapters.spark_ivm.compiler.runtime.precompute import read_by_name, shared_order

SCHEMAS = {f"s.t{i}": [("k", "int"), (f"x{i}", "int")] for i in range(6)}


def _outer_chain(outer_steps: int) -> str:
    """An inner join, then `outer_steps` LEFT JOINs on the first input's key."""
    inputs = range(outer_steps + 2)
    joins = " ".join(
        f"{'join' if i == 1 else 'left join'} t{i} on t{i}.k = t0.k" for i in inputs if i
    )
    return f"select t0.k, {', '.join(f't{i}.x{i}' for i in inputs)} from t0 {joins}"


def _delta(text: str, changed: set[str]) -> tuple[exp.Select, list]:
    p = planned(text, SCHEMAS)
    renderer = renderer_for(p, changed, SCHEMAS)
    select = render.compacted_delta_select(p, renderer, None)
    assert select is not None
    return select, shared_order(select, [renderer])


def test_each_outer_step_reads_its_keys_by_name_computed_once_in_step_order():
    text = _outer_chain(3)
    select, shared = _delta(text, {f"t{i}" for i in range(5)})
    assert len(shared) == 3  # one K per outer step
    names = [name for name, _ in shared]
    assert all(name.startswith(SHARED_KEYS) for name in names)
    # each K reads only the ones computed before it, never inline copies
    for n, (_, body) in enumerate(shared):
        read = {t.name for t in body.find_all(exp.Table)} & set(names)
        assert read <= set(names[:n])
        assert not [s for s in body.find_all(exp.Subquery) if s.alias == KEYS and s.find(exp.Join)]
    # the runtime's renaming leaves no placeholder behind
    renamed = {name: f"keys_{n}" for n, (name, _) in enumerate(shared)}
    statement = read_by_name(select, renamed).sql(dialect="spark")
    assert SHARED_KEYS not in statement
    assert [statement.count(f"keys_{n}") for n in range(3)] == [4, 4, 4]


def test_the_statement_grows_polynomially_with_the_outer_steps():
    """Inline, each outer step multiplied the statement by about four (16x for three steps);
    by name, the terms grow in number and length, each step by less than the one before."""
    sizes = []
    for steps in range(1, 4):
        select, shared = _delta(_outer_chain(steps), {f"t{i}" for i in range(steps + 2)})
        sizes.append(len(select.sql(dialect="spark")) + sum(len(b.sql()) for _, b in shared))
    assert sizes[2] < 7 * sizes[0], sizes
    assert sizes[2] / sizes[1] < sizes[1] / sizes[0], sizes


def test_keys_of_change_logs_alone_stay_inline():
    """One LEFT JOIN of two tables: K is the keys of two logs, cheaper read where it stands
    than computed by one more job."""
    select, shared = _delta("select t0.k, t2.x2 from t0 left join t2 on t2.k = t0.k", {"t0", "t2"})
    assert shared == []
    assert [s for s in select.find_all(exp.Subquery) if s.alias == KEYS]
