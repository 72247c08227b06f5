"""inequality: EXISTS correlated by equalities and one comparison, as a test of a MIN / MAX.

A semi join (`semi_join.py`) keeps a DISTINCT state of the correlation keys, which only an
equality can join. TPC-H Q21 asks whether an order has a line item of *another* supplier:
`EXISTS (SELECT * FROM lineitem l2 WHERE l2.l_orderkey = l1.l_orderkey AND l2.l_suppkey <>
l1.l_suppkey)`. Over the rows S of the sub-query that match the equalities (NULLs of x
never compare, and MIN / MAX skip them):

    EXISTS (.. x <> v)  ==  min(S.x) <> v OR max(S.x) <> v   (some x differs from v)
    EXISTS (.. x <  v)  ==  min(S.x) <  v        EXISTS (.. x <= v)  ==  min(S.x) <= v
    EXISTS (.. x >  v)  ==  max(S.x) >  v        EXISTS (.. x >= v)  ==  max(S.x) >= v

each wrapped in `coalesce(.., false)`: over no rows (MIN and MAX NULL) and for a NULL v the
EXISTS is false. The sub-query becomes a scalar sub-query of those aggregates correlated by
the equalities only (`scalar.py`: a LEFT JOIN with MIN / MAX kept per key), and NOT EXISTS
its negation. Only one comparison with the outer row is taken; more (`x < v AND y > w`,
BETWEEN) do not split into one aggregate each: they are a state of the outer values that
match (`theta_semi_join.py`).

    >>> import sqlglot
    >>> e = sqlglot.parse_one("EXISTS (SELECT * FROM db.i AS i WHERE i.k = o.k AND i.s <> o.s)",
    ...                       read="spark")
    >>> as_scalar_test(e).sql("spark")
    '(SELECT COALESCE(MIN(i.s) <> o.s OR MAX(i.s) <> o.s, FALSE) FROM db.i AS i WHERE i.k = o.k)'
"""

from __future__ import annotations

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.frontend.correlation import (
    aggregates,
    beyond_keys,
    own_aliases,
)
from dbt.adapters.spark_ivm.compiler.sql.templates import aliases, conjuncts

#: A comparison read the other way round: `v < x` is `x > v`.
_FLIPPED: dict[type[exp.Expression], type[exp.Expression]] = {
    exp.NEQ: exp.NEQ,
    exp.LT: exp.GT,
    exp.LTE: exp.GTE,
    exp.GT: exp.LT,
    exp.GTE: exp.LTE,
}


def _oriented(
    conjunct: exp.Expression, own: set[str]
) -> tuple[type[exp.Expression], exp.Expression, exp.Expression] | None:
    """(op, inner side, outer side) of a comparison of an inner and an outer expression."""
    kind = type(conjunct)
    if kind not in _FLIPPED:
        return None
    left, right = conjunct.this, conjunct.expression
    a, b = aliases(left), aliases(right)
    if a and a <= own and b and not b & own:
        return kind, left, right
    if b and b <= own and a and not a & own:
        return _FLIPPED[kind], right, left
    return None


def as_scalar_test(exists: exp.Exists) -> exp.Expression | None:
    """The scalar sub-query testing what `exists` tests (None: not of this shape)."""
    inner = exists.this.this if isinstance(exists.this, exp.Subquery) else exists.this
    if not isinstance(inner, exp.Select) or inner.args.get("from_") is None:
        return None
    if aggregates(inner) or inner.args.get("offset"):
        return None
    own = own_aliases(inner)
    where = inner.args.get("where")
    found = conjuncts(where.this if where is not None else None)
    # the correlation beyond its equalities must be this one comparison (more: a state of
    # the outer values, `theta_semi_join.py`)
    beyond = beyond_keys(found, own)
    oriented = _oriented(beyond[0], own) if len(beyond) == 1 else None
    if oriented is None:
        return None
    conjunct, (kind, x, v) = beyond[0], oriented
    low, high = exp.Min(this=x.copy()), exp.Max(this=x.copy())
    if kind is exp.NEQ:
        test: exp.Expression = exp.or_(
            exp.NEQ(this=low, expression=v.copy()), exp.NEQ(this=high, expression=v.copy())
        )
    elif kind in (exp.LT, exp.LTE):
        test = kind(this=low, expression=v.copy())
    else:
        test = kind(this=high, expression=v.copy())
    select = inner.copy()
    rest = [c.copy() for c in found if c is not conjunct]
    select.set("where", exp.Where(this=exp.and_(*rest)) if rest else None)
    select.set("expressions", [exp.func("coalesce", test, exp.false())])
    for arg in ("distinct", "order", "limit"):
        select.set(arg, None)
    return exp.Subquery(this=select)
