"""union: UNION ALL and UNION of flat SELECTs, one state fed by every branch.

A UNION ALL is a sum of bags, so its delta is the sum of its branches' deltas:

    d(B_1 UNION ALL .. UNION ALL B_n) = dB_1 + .. + dB_n

Each branch is a flat query of its own (`Query.branches`) with its own inputs, joins and
WHERE; its delta is the ordinary sum over its inputs (`delta.py`), projected to the shared
key columns `__ivm_k<i>` (the i-th output of that branch). The terms of all branches are
added up per row, so a row two branches produce carries both weights. The state is a bag
(each distinct row with its multiplicity, `__ivm_count__`) for UNION ALL; for UNION it is
the same count per distinct row, shown once while it is positive (the DISTINCT of the sum).
One delta table, one MERGE and one metadata row whose watermarks cover every branch's base
relations: a relation two branches read is captured once and read by both.

Example: `select k from a union all select k from b`; insert k=1 into a, delete one k=1
from b -> the delta of row (1) is +1 - 1 = 0, and the state is not touched.

Each branch's keys are cast to the union's column types (Spark's, from `DESCRIBE QUERY`)
before the branches are added up and grouped again: Spark widens a column's type across
branches (an int branch and a string branch give strings), so rows that differ before the
widening may be one row after it, and a key compared as the branch's own type would match
the wrong state rows (a string compared with an int is cast to an int: '01' = 1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.aggregates import COUNT
from dbt.adapters.spark_ivm.compiler.delta import WEIGHT, TermRenderer
from dbt.adapters.spark_ivm.compiler.plan import Plan
from dbt.adapters.spark_ivm.compiler.pruning import KeyRange
from dbt.adapters.spark_ivm.compiler.render import (
    META,
    ROW,
    compacted_delta_select,
    full_term,
    with_meta_row,
)
from dbt.adapters.spark_ivm.compiler.templates import col, template


def _typed(plan: Plan, part: exp.Select, extra: Sequence[str]) -> exp.Select:
    """`part` with each key cast to the union's type of its column: a branch compared as
    its own type would match other rows (a string key compared with an int one is cast to
    an int: '01' = 1) and group apart rows that the union makes one ('1' and 1)."""
    select = exp.Select().from_(exp.alias_(exp.Subquery(this=part), "__ivm_part"))
    for name, dtype in zip(plan.key_columns, plan.output_types):
        typed = exp.cast(col(name), exp.DataType.build(dtype, dialect="spark"))
        select = select.select(exp.alias_(typed, name, quoted=True))
    return select.select(*(col(c) for c in extra))


def _sum_of(plan: Plan, parts: Sequence[exp.Select], extra: Sequence[str] = ()) -> exp.Select:
    """`SELECT keys FROM (part UNION ALL part ..) GROUP BY keys`, each part's keys cast to
    the union's types (`_typed`): add the aggregate."""
    keys = plan.key_columns
    parts = [_typed(plan, part, extra) for part in parts]
    union: exp.Expression = parts[0]
    for part in parts[1:]:
        union = exp.union(union, part, distinct=False)
    select = exp.Select().from_(exp.alias_(exp.Subquery(this=union), "__ivm_branches"))
    select = select.select(*(col(k) for k in keys))
    return select.group_by(*(col(k) for k in keys)) if keys else select


def initial_select(plan: Plan, renderers: Sequence[TermRenderer], meta: str) -> exp.Expression:
    """Every distinct row of all branches with its multiplicity, plus the metadata row."""
    keys = plan.key_columns
    parts = []
    for branch, renderer in zip(plan.branches, renderers):
        term = full_term(branch.query)
        parts.append(renderer.render(term, list(zip(keys, branch.keys)), with_weight=False))
    rows = _sum_of(plan, parts)
    rows = rows.select(exp.alias_(template("COUNT(*)"), COUNT, quoted=True))
    select = exp.Select().select(
        exp.alias_(exp.Literal.number(0), ROW, quoted=True),
        exp.alias_(exp.cast(exp.null(), exp.DataType.build("string")), META, quoted=True),
        *(col(k) for k in [*keys, COUNT]),
    )
    select = select.from_(exp.alias_(exp.Subquery(this=rows), "__ivm_rows"))
    return with_meta_row(select, meta, [*keys, COUNT])


def compacted_select(
    plan: Plan,
    renderers: Sequence[TermRenderer],
    key_ranges: Sequence[Mapping[tuple[int, str], KeyRange]],
) -> exp.Select | None:
    """The sum of the branches' compacted deltas, identical rows summed, zero weights
    dropped (None when no branch's input changed)."""
    parts = [
        part
        for branch, renderer, ranges in zip(plan.branches, renderers, key_ranges)
        if (part := compacted_delta_select(branch, renderer, ranges)) is not None
    ]
    if not parts:
        return None
    w = col(WEIGHT)
    summed = _sum_of(plan, parts, [WEIGHT])
    summed = summed.select(exp.alias_(template("SUM(:w)", w=w), WEIGHT, quoted=True))
    return summed.having(template("SUM(:w) <> 0", w=w))
