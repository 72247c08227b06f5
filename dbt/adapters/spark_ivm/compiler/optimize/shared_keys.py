"""shared_keys: each outer step's affected keys K computed once, not once per term reading it.

The padded-row terms of an outer step (`outer_join.py`) read its affected keys K four times
(`(L_new |> S_new)|K - (L_old |> S_old)|K`: the filter on L and S's slice, at both
versions), and K is the union of the key columns of the left side's delta terms. Behind a
second outer step those delta terms include the first step's padded terms, each with its
own K copies, so the rendered delta grows by a factor of about four per outer step: an
inner join with three LEFT JOINs to sub-query states (`exists_inequality` in the harness)
rendered a 169 KB statement of 1505 SELECTs that Spark took 44 s to plan for ten rows.

Computed once into a scratch relation, each K is read by name:

    K_j  =  keys(d(N_(j-1)))          -- computed once, innermost step first
    pad_j(..)|K_j  reads  K_j         -- every copy is the relation

which is exact (the scratch holds the same rows at the same pinned versions) and keeps the
statement linear in the number of outer steps. A K whose delta terms join nothing (the keys
of change logs alone, as for one LEFT JOIN) stays inline: reading a computed log four times
costs less than one more Spark job.

>>> import sqlglot
>>> q = sqlglot.parse_one(
...     "SELECT 1 FROM (SELECT a FROM x JOIN y ON x.k = y.k) AS __ivm_keys "
...     "UNION ALL SELECT 2 FROM (SELECT a FROM x JOIN y ON x.k = y.k) AS __ivm_keys "
...     "UNION ALL SELECT 3 FROM (SELECT a FROM log) AS __ivm_keys", read="spark")
>>> [len(copies) for copies in innermost(q)]
[2]
>>> for copies in innermost(q):
...     read_from(copies, exp.to_table("k0"))
>>> innermost(q)
[]
>>> q.sql(dialect="spark")
'SELECT 1 FROM k0 AS `__ivm_keys` UNION ALL SELECT 2 FROM k0 AS `__ivm_keys` UNION ALL SELECT 3 FROM (SELECT a FROM log) AS __ivm_keys'
"""

from __future__ import annotations

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.operators.outer_join import KEYS


def _holds_keys(node: exp.Expression) -> bool:
    return any(s.alias == KEYS for s in node.find_all(exp.Subquery))


def innermost(select: exp.Expression) -> list[list[exp.Subquery]]:
    """The affected-key sets of a rendered delta worth computing once: those that hold no
    other K and join something, each as the list of its copies (identical SQL)."""
    found: dict[str, list[exp.Subquery]] = {}
    for sub in select.find_all(exp.Subquery):
        if sub.alias != KEYS or _holds_keys(sub.this) or not any(sub.this.find_all(exp.Join)):
            continue
        found.setdefault(sub.this.sql(dialect="spark"), []).append(sub)
    return list(found.values())


def read_from(copies: list[exp.Subquery], relation: exp.Table) -> None:
    """Replace every copy of one K by `relation` (in place)."""
    for sub in copies:
        sub.replace(exp.alias_(relation.copy(), KEYS, table=True, quoted=True))
