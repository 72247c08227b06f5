"""weights: a change source's rows -> the compacted log every capture method writes.

Each distinct changed row once, with its net weight `__ivm_w` (+n inserted, -n deleted): the
sum of the source's per-row weights `__ivm_cw` grouped by every column read, zero sums
dropped. Rows that a rewrite carried over unchanged (a copy-on-write file rewritten around
one changed row: every other row deleted and re-inserted) sum to 0 and vanish here.

Example: source rows (k=1, -1), (k=1, +1), (k=2, +1) -> log (k=2, +1).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.templates import col


def weighted_log(
    source: exp.Expression, columns: Sequence[str], weight: exp.Expression
) -> exp.Select:
    """SELECT columns, SUM(weight) AS __ivm_w FROM source GROUP BY columns HAVING sum != 0."""
    select = exp.Select().from_(exp.alias_(exp.Subquery(this=source), "__ivm_src", table=True))
    for name in columns:
        select = select.select(col(name))
    total = exp.Sum(this=weight)
    select = select.select(exp.alias_(total, "__ivm_w", quoted=True))
    if columns:
        select = select.group_by(*(col(n) for n in columns))
    return select.having(exp.NEQ(this=total.copy(), expression=exp.Literal.number(0)))
