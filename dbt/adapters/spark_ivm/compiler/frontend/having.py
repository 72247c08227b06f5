"""having: a HAVING that tests a sub-query, as a WHERE over the aggregate kept as a state.

`SELECT k, agg(x) a FROM r GROUP BY k HAVING agg(y) > (SELECT ..)` compares each group with
a value the group does not hold (TPC-H Q11: a part's stock value against a fraction of the
whole stock). The sub-query rules (`scalar.py`, `semi_join.py`) join their state into the
FROM of the SELECT that tests them, but a HAVING reads only the group keys and aggregates.
So the aggregate moves into a derived table, which is a state of its own (`stages.py`), and
the HAVING becomes the WHERE of the SELECT that reads it:

    SELECT g.k AS k, g.a AS a
    FROM (SELECT k, agg(x) a, agg(y) __ivm_h0 FROM r GROUP BY k) ivm_having g
    WHERE g.__ivm_h0 > (SELECT ..)

Exact: the derived table has one row per group with every value the HAVING reads (its
aggregates and the group keys it names, as hidden columns), and a WHERE over those rows
keeps the groups the HAVING keeps. A change of the sub-query's value then re-tests the kept
groups from the state, not from the base rows.

    >>> import sqlglot
    >>> s = sqlglot.parse_one("SELECT t.k AS k, SUM(t.x) AS s FROM db.t AS t GROUP BY t.k "
    ...     "HAVING SUM(t.x) > (SELECT AVG(u.x) FROM db.u AS u)", read="spark")
    >>> lift(s).sql("spark")
    'SELECT ivm_having.k AS k, ivm_having.s AS s FROM (SELECT t.k AS k, SUM(t.x) AS s, \
SUM(t.x) AS __ivm_h0 FROM db.t AS t GROUP BY t.k) AS ivm_having WHERE ivm_having.__ivm_h0 > \
(SELECT AVG(u.x) FROM db.u AS u)'
"""

from __future__ import annotations

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.frontend.correlation import own_aliases

ALIAS = "ivm_having"
HIDDEN = "__ivm_h"


def _reads_outer(column: exp.Column, select: exp.Select) -> bool:
    """Is `column` (inside `select`'s HAVING) a column of `select`'s own inputs, not of a
    sub-query's (whose aliases may repeat the outer ones)?"""
    scope = column.find_ancestor(exp.Select)
    while scope is not None and scope is not select:
        if column.table in own_aliases(scope):
            return False
        scope = scope.find_ancestor(exp.Select)
    return True


def needed(select: exp.Select) -> bool:
    having = select.args.get("having")
    return having is not None and having.find(exp.Subquery, exp.Exists) is not None


def lift(select: exp.Select) -> exp.Select:
    """`select` with a HAVING that tests a sub-query rewritten as above (else `select`)."""
    if not needed(select) or select.args.get("limit") or select.args.get("offset"):
        return select
    having = select.args["having"].this
    targets: list[exp.Expression] = []
    for node in having.walk():
        if isinstance(node, exp.AggFunc) and node.find_ancestor(exp.Select) is select:
            if node.find_ancestor(exp.AggFunc) is None:
                targets.append(node)
        elif (
            isinstance(node, exp.Column)
            and node.find_ancestor(exp.AggFunc) is None
            and _reads_outer(node, select)
        ):
            targets.append(node)
    names: list[tuple[exp.Expression, str]] = []
    for node in targets:
        if not any(node == seen for seen, _ in names):
            names.append((node, f"{HIDDEN}{len(names)}"))

    condition = having.copy()
    originals = list(having.walk())
    for original, node in zip(originals, list(condition.walk())):
        if any(original is t for t in targets):
            name = next(n for seen, n in names if seen == original)
            node.replace(exp.column(name, table=ALIAS))
    inner = select.copy()
    inner.set("having", None)
    inner.set("order", None)
    inner.set(
        "expressions",
        [*inner.expressions, *(exp.alias_(seen.copy(), name) for seen, name in names)],
    )
    names_out = [e.alias_or_name for e in select.expressions]
    outer = exp.select(*(exp.alias_(exp.column(n, table=ALIAS), n) for n in names_out))
    outer = outer.from_(
        exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(ALIAS)))
    )
    outer.set("where", exp.Where(this=condition))
    return outer
