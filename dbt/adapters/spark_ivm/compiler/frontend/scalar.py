"""scalar: scalar sub-queries that aggregate, as joins with an aggregate state.

A scalar sub-query's value is one aggregate over the rows it selects; that aggregate is a
state of its own (`stages.py`) and the sub-query becomes a join with it:

    uncorrelated:  (SELECT agg(i.x) FROM i WHERE p)
        == JOIN (SELECT agg(i.x) AS v FROM i WHERE p) ivm_scalar0 ON TRUE  ->  ivm_scalar0.v
    correlated by equality:  (SELECT agg(i.x) FROM i WHERE i.k = o.k AND p)
        == LEFT JOIN (SELECT i.k AS k0, agg(i.x) AS v FROM i WHERE p GROUP BY i.k) ivm_scalar0
           ON ivm_scalar0.k0 = o.k  ->  ivm_scalar0.v (coalesce(.., 0) for a count)

An ungrouped aggregate has exactly one row, so the cross join keeps every outer row once; the
grouped one has at most one row per key, and an outer row without one gets what the
aggregate of no rows is: 0 for count and count_if, NULL for the others accepted here.

    select c.id, (select count(*) from db.orders o where o.cust = c.id) n from db.customers c
    -> select c.id, coalesce(ivm_scalar0.v, 0) n from db.customers c
       left join (select o.cust k0, count(*) v from db.orders o group by o.cust) ivm_scalar0
         on ivm_scalar0.k0 = c.id

The value may be an expression of the sub-query's aggregates, `(SELECT 0.2 * avg(i.x) ..)`
(TPC-H Q17, Q20): the state keeps each aggregate (`v`, `v1`, ..) and the expression is
computed on the joined row. Over no rows it then reads what each aggregate is over no rows
(NULL, or 0 for a count), so it is what the sub-query is, whatever the expression; a column
of the outer row in it is read there too. A column of the sub-query's own inputs outside an
aggregate is refused (Spark refuses it too).

A scalar sub-query that does not aggregate (it could return several rows, which fails the
query in Spark) or groups is refused by name.
"""

from __future__ import annotations

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.errors import UnsupportedQueryError
from dbt.adapters.spark_ivm.compiler.errors import fragment as _fragment
from dbt.adapters.spark_ivm.compiler.frontend import correlation

ALIAS = "ivm_scalar"
#: Aggregates whose value over no rows is 0 (the others accepted are NULL over no rows).
ZERO_ON_EMPTY: tuple[type[exp.Expression], ...] = (exp.Count, exp.CountIf)
NULL_ON_EMPTY: tuple[type[exp.Expression], ...] = (
    exp.Sum, exp.Avg, exp.Min, exp.Max, exp.Stddev, exp.StddevPop, exp.StddevSamp,
    exp.Variance, exp.VariancePop,
)  # fmt: skip


def is_scalar(node: exp.Expression) -> bool:
    """A sub-query used as a value (not a FROM/JOIN input, not under EXISTS / IN, not an
    operand of a set operation: `(select k from b)` in `a except (select k from b)`)."""
    return isinstance(node, exp.Subquery) and not isinstance(
        node.parent, (exp.From, exp.Join, exp.Exists, exp.In, exp.SetOperation)
    )


def _join_for(sub: exp.Subquery, number: int, model: str) -> tuple[exp.Join, exp.Expression]:
    """The join replacing the scalar sub-query `sub`, and the expression of its value."""
    inner = sub.this
    if (
        not isinstance(inner, exp.Select)
        or inner.args.get("from_") is None
        or len(inner.expressions) != 1
        or not inner.expressions[0].find(exp.AggFunc)
        or inner.args.get("group")
        or inner.args.get("having")
        or inner.args.get("distinct")
    ):
        raise UnsupportedQueryError(
            model,
            "a scalar sub-query that is not one ungrouped aggregate (it may return several rows)",
            _fragment(sub),
        )
    found = correlation.split(inner, model, "a scalar sub-query")
    keys, links, local = found.keys, found.links, found.local
    name = f"{ALIAS}{number}"
    value = inner.expressions[0].unalias()
    calls = _aggregates(value, correlation.own_aliases(inner), sub, model)
    state = inner.copy()
    columns = [f"v{i}" if i else "v" for i in range(len(calls))]
    state.set(
        "expressions",
        [
            *(exp.alias_(k.copy(), f"k{i}") for i, k in enumerate(keys)),
            *(exp.alias_(call.copy(), c) for call, c in zip(calls, columns)),
        ],
    )
    state.set("where", exp.Where(this=exp.and_(*local)) if local else None)
    state.set("order", None)
    read: dict[int, exp.Expression] = {}
    for call, column in zip(calls, columns):
        result = exp.column(column, table=name)
        if keys and isinstance(call, ZERO_ON_EMPTY):
            result = exp.func("coalesce", result, exp.Literal.number(0))
        elif keys and not isinstance(call, NULL_ON_EMPTY):
            raise UnsupportedQueryError(
                model,
                "a correlated scalar sub-query of an aggregate whose value over no rows is "
                "not NULL or 0 (count, sum, avg, min, max, stddev and variance are)",
                _fragment(sub),
            )
        read[id(call)] = result
    outer_value = _substituted(value, calls, read)
    if keys:
        state.set("group", exp.Group(expressions=[k.copy() for k in keys]))
        on: exp.Expression = exp.and_(
            *(
                exp.EQ(this=exp.column(f"k{i}", table=name), expression=link.copy())
                for i, link in enumerate(links)
            )
        )
        side = "LEFT"
    else:
        on, side = exp.true(), None
    alias = exp.TableAlias(this=exp.to_identifier(name))
    join = exp.Join(this=exp.Subquery(this=state, alias=alias), on=on, side=side)
    return join, outer_value


def _aggregates(
    value: exp.Expression, own: set[str], sub: exp.Subquery, model: str
) -> list[exp.Expression]:
    """The aggregate calls the sub-query's value is an expression of (each kept by the
    state); a column of the sub-query's own inputs outside them is refused."""

    def under_aggregate(node: exp.Expression) -> bool:  # within `value` only
        while node is not value:
            node = node.parent
            if isinstance(node, exp.AggFunc):
                return True
        return False

    calls = [a for a in value.find_all(exp.AggFunc) if not under_aggregate(a)]
    for column in value.find_all(exp.Column):
        if column.table in own and not under_aggregate(column):
            raise UnsupportedQueryError(
                model,
                "a scalar sub-query whose value reads a column outside its aggregate",
                _fragment(sub),
            )
    return calls


def _substituted(
    value: exp.Expression, calls: list[exp.Expression], read: dict[int, exp.Expression]
) -> exp.Expression:
    """`value` (the sub-query's expression of its aggregates) read from the state's columns:
    over no rows each aggregate is what the state's padding gives (NULL, or 0 for a count),
    so the expression is too."""
    if id(value) in read:
        return read[id(value)].copy()
    copy = value.copy()
    for original, node in zip(list(value.walk()), list(copy.walk())):
        if id(original) in read:
            node.replace(read[id(original)].copy())
    return copy


def rewrite(select: exp.Select, model: str) -> None:
    """Replace the scalar sub-queries of `select`'s own clauses by joins (in place).

    >>> import sqlglot
    >>> s = sqlglot.parse_one("select c.id, (select count(*) from db.o o where o.cust = c.id)"
    ...                       " as n from db.c c", dialect="spark")
    >>> rewrite(s, "m")
    >>> print(s.sql("spark").replace(" LEFT JOIN", "\\nLEFT JOIN").replace(" ON", "\\nON"))
    SELECT c.id, COALESCE(ivm_scalar0.v, 0) AS n FROM db.c AS c
    LEFT JOIN (SELECT o.cust AS k0, COUNT(*) AS v FROM db.o AS o GROUP BY o.cust) AS ivm_scalar0
    ON ivm_scalar0.k0 = c.id
    """
    found = [
        s for s in select.find_all(exp.Subquery)
        if is_scalar(s) and s.find_ancestor(exp.Select) is select
    ]  # fmt: skip
    if not found:
        return
    number = len([s for s in select.find_all(exp.Subquery) if str(s.alias).startswith(ALIAS)])
    joins = list(select.args.get("joins") or [])
    for sub in found:
        join, value = _join_for(sub, number, model)
        sub.replace(value)
        joins.append(join)
        number += 1
    select.set("joins", joins)
