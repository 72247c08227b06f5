"""theta_semi_join: EXISTS correlated by equalities and further comparisons, as a DISTINCT
state of the outer values it matches.

A semi join (`semi_join.py`) keeps a DISTINCT state of the correlation keys, which only an
equality can join; one comparison besides is a MIN / MAX test (`inequality.py`). Two or more
(`i.k = o.k AND i.a < o.a AND i.b > o.b`, ranges) do not split into one aggregate each. But
whether the sub-query has a match depends only on the outer row's values of the columns it
reads, c = (o.k, o.a, o.b): so the state is the set of those values that do match,

    M = SELECT DISTINCT c FROM <o's relation> o' JOIN i ON <the correlation over o'>
    EXISTS (..)      ==  JOIN M ON M.c = o.c
    NOT EXISTS (..)  ==  LEFT JOIN M ON M.c = o.c  WHERE M.k0 IS NULL

M is a DISTINCT over an inner join whose ON holds the equality, so a change of i or of o's
relation recomputes the outer values of the affected equality keys only (the join's delta
terms), and no statement forms a product. Exact because every outer row's c comes from o's
relation, and each comparison is NULL-strict (`=`, `<>`, `<`, `<=`, `>`, `>=`, BETWEEN over
columns, literals, arithmetic and casts): an outer row with a NULL in c has no match, and M
has no NULL in c, so `M.c = o.c` (no `<=>` needed) and `M.k0 IS NULL` tell a miss.

    >>> import sqlglot
    >>> q = sqlglot.parse_one(
    ...     "SELECT o.k FROM db.o AS o WHERE EXISTS (SELECT 1 FROM db.i AS i "
    ...     "WHERE i.k = o.k AND i.a < o.a AND i.b > o.b + 1 AND i.x > 0)", read="spark")
    >>> state, on = semi_state(q.args["where"].this, q, 0, "m")
    >>> print(state.sql("spark"))
    (SELECT DISTINCT ivm_theta0.k AS k0, ivm_theta0.a AS k1, ivm_theta0.b AS k2 FROM db.i AS i \
JOIN db.o AS ivm_theta0 ON i.k = ivm_theta0.k AND i.a < ivm_theta0.a AND i.b > ivm_theta0.b + 1 \
WHERE i.x > 0) AS ivm_semi0
    >>> print(on.sql("spark"))
    ivm_semi0.k0 = o.k AND ivm_semi0.k1 = o.a AND ivm_semi0.k2 = o.b

Refused by name: a correlation with no equality (M would be a product), one that reads more
than one outer input or an outer input that is not a table, and a condition on the outer
row that is not a NULL-strict comparison (`o.a IS NULL OR ..`, `coalesce(o.a, 0)`).
"""

from __future__ import annotations

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.errors import UnsupportedQueryError, fragment
from dbt.adapters.spark_ivm.compiler.frontend.correlation import (
    aggregates,
    beyond_keys,
    key_pair,
    own_aliases,
)
from dbt.adapters.spark_ivm.compiler.sql.templates import aliases, conjuncts

#: The alias of the outer input's copy inside the state.
OUTER = "ivm_theta"
#: Comparisons that are not TRUE when a side is NULL.
_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.Between)
#: Nodes of an outer expression that keep a NULL input NULL.
_STRICT = (
    exp.Column, exp.Identifier, exp.Literal, exp.Paren, exp.Neg, exp.Cast, exp.DataType,
    exp.DataTypeParam, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv,
)  # fmt: skip


def wanted(exists: exp.Exists) -> bool:
    """Is `exists` correlated by more than equalities (this module's shape)?"""
    inner = exists.this.this if isinstance(exists.this, exp.Subquery) else exists.this
    if not isinstance(inner, exp.Select) or inner.args.get("from_") is None:
        return False
    if aggregates(inner) or inner.args.get("limit") or inner.args.get("offset"):
        return False  # `semi_join.py` lifts or refuses these
    own = own_aliases(inner)
    where = inner.args.get("where")
    return bool(beyond_keys(conjuncts(where.this if where is not None else None), own))


def _outer_input(select: exp.Select, alias: str) -> exp.Table | None:
    sources = [select.args["from_"].this] if select.args.get("from_") else []
    sources += [j.this for j in select.args.get("joins") or []]
    for source in sources:
        if source.alias_or_name == alias:
            return source if isinstance(source, exp.Table) else None
    return None


def _refuse(model: str, why: str, node: exp.Expression) -> UnsupportedQueryError:
    return UnsupportedQueryError(model, f"EXISTS correlated by {why}", fragment(node))


def semi_state(
    exists: exp.Exists, outer: exp.Select, number: int, model: str
) -> tuple[exp.Subquery, exp.Expression]:
    """The DISTINCT state of the matched outer values (aliased `ivm_semi<number>`) and the
    equalities joining it to `outer`'s rows."""
    inner = exists.this.this if isinstance(exists.this, exp.Subquery) else exists.this
    own = own_aliases(inner)
    where = inner.args.get("where")
    local, correlated = [], []
    for conjunct in conjuncts(where.this if where is not None else None):
        (local if aliases(conjunct) <= own else correlated).append(conjunct)
    if not any(key_pair(c, own) is not None for c in correlated):
        raise _refuse(model, "comparisons without an equality (a product of both sides)",
                      exists)  # fmt: skip
    outer_aliases = {a for c in correlated for a in aliases(c) - own}
    if len(outer_aliases) != 1:
        raise _refuse(model, "columns of more than one outer input", exists)
    (alias,) = outer_aliases
    table = _outer_input(outer, alias)
    if table is None:
        raise _refuse(model, f"an outer input `{alias}` that is not a table of this SELECT",
                      exists)  # fmt: skip
    for conjunct in correlated:
        if not isinstance(conjunct, _COMPARISONS) or not all(
            isinstance(n, _STRICT) for side in conjunct.iter_expressions()
            if aliases(side) - own for n in side.walk()
        ):  # fmt: skip
            raise _refuse(model, "a condition on the outer row that is not a NULL-strict "
                          "comparison", conjunct)  # fmt: skip
    copy = f"{OUTER}{number}"
    columns: list[str] = []
    on_outer: list[exp.Expression] = []
    for conjunct in sorted(correlated, key=lambda c: key_pair(c, own) is None):
        moved = conjunct.copy()
        for column in moved.find_all(exp.Column):
            if column.table == alias:
                if column.name not in columns:
                    columns.append(column.name)
                column.set("table", exp.to_identifier(copy))
        on_outer.append(moved)
    state = inner.copy()
    state.set("where", exp.Where(this=exp.and_(*local)) if local else None)
    copied = table.copy()
    copied.set("alias", exp.TableAlias(this=exp.to_identifier(copy)))
    state.set("joins", [*(state.args.get("joins") or []),
                        exp.Join(this=copied, on=exp.and_(*on_outer))])  # fmt: skip
    state.set("expressions", [exp.alias_(exp.column(c, table=copy), f"k{i}")
                              for i, c in enumerate(columns)])  # fmt: skip
    state.set("distinct", exp.Distinct())
    for arg in ("order", "limit"):
        state.set(arg, None)
    name = f"ivm_semi{number}"
    subquery = exp.Subquery(this=state, alias=exp.TableAlias(this=exp.to_identifier(name)))
    on = exp.and_(*(exp.EQ(this=exp.column(f"k{i}", table=name), expression=exp.column(c, table=alias))
                    for i, c in enumerate(columns)))  # fmt: skip
    return subquery, on
