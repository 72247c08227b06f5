"""weights: a change source's rows -> the compacted log every capture method writes.

Each distinct changed row once, with its net weight `__ivm_w` (+n inserted, -n deleted): the
sum of the source's per-row weights `__ivm_cw` grouped by every column read, zero sums
dropped. Rows that a rewrite carried over unchanged (a copy-on-write file rewritten around
one changed row: every other row deleted and re-inserted) sum to 0 and vanish here.

Example: source rows (k=1, -1), (k=1, +1), (k=2, +1) -> log (k=2, +1).

A float or double column (`exact`) is grouped by its text, not its value: Spark's grouping
takes -0.0 for 0.0 (and writes 0.0 out), so an update from 0.0 to -0.0 would cancel out of
the log and never reach a model that shows the value (`cast(x as string)`, a plain
projection). Distinct doubles have distinct texts, and the group's value is written as read.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.sql.templates import col


def exact_columns(columns: Iterable[tuple[str, str]]) -> list[str]:
    """The columns, of (name, Spark type) pairs, that a log groups by their text.

    >>> exact_columns([("k", "int"), ("x", "DOUBLE"), ("f", "float")])
    ['x', 'f']
    """
    return [name for name, dtype in columns if dtype.lower() in ("double", "float")]


def weighted_log(
    source: exp.Expression,
    columns: Sequence[str],
    weight: exp.Expression,
    exact: Collection[str] = (),
) -> exp.Select:
    """SELECT columns, SUM(weight) AS __ivm_w FROM source GROUP BY columns HAVING sum != 0
    (`exact` columns grouped by their text, see the module docstring)."""
    select = exp.Select().from_(exp.alias_(exp.Subquery(this=source), "__ivm_src", table=True))
    keys: list[exp.Expression] = []
    for name in columns:
        if name in exact:
            select = select.select(exp.alias_(exp.Max(this=col(name)), name, quoted=True))
            keys.append(exp.cast(col(name), exp.DataType.build("string")))
        else:
            select = select.select(col(name))
            keys.append(col(name))
    total = exp.Sum(this=weight)
    select = select.select(exp.alias_(total, "__ivm_w", quoted=True))
    if keys:
        select = select.group_by(*keys)
    return select.having(exp.NEQ(this=total.copy(), expression=exp.Literal.number(0)))
