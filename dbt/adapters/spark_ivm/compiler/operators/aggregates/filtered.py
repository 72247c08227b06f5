"""Filtered aggregates: `agg(x) FILTER (WHERE c)` and `count_if(c)` as plain aggregates.

An aggregate that ignores NULL arguments sees exactly the rows a FILTER lets through when
each argument is guarded by the filter's condition:

    agg(x) FILTER (WHERE c)   ==  agg(CASE WHEN c THEN x END)
    count(*) FILTER (WHERE c) ==  count(CASE WHEN c THEN 1 END)
    count_if(c)               ==  count(CASE WHEN c THEN 1 END)

A row whose condition is false or NULL contributes a NULL argument, which the aggregate
skips, just as the FILTER skips the row; a group where no row passes gets the aggregate of no
values (0 for counts, NULL otherwise) either way. So the rewritten call is kept by the
ordinary rule of its aggregate (`count_if` becomes incremental instead of recomputed), and
the state never sees a FILTER:

    sum(x) FILTER (WHERE k > 1) over rows (k=1, x=5), (k=2, x=7), (k=3, x=NULL)
    == sum(CASE WHEN k > 1 THEN x END) over the arguments NULL, 7, NULL == 7

The guard is exact only for aggregates that skip NULL arguments; a FILTER on any other
(`first`, `any_value`, ...) is refused by name.
"""

from __future__ import annotations

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.errors import UnsupportedQueryError

#: Aggregates that skip NULL arguments in Spark (so a guard is as good as the FILTER).
NULL_SKIPPING: tuple[type[exp.Expression], ...] = (
    exp.Count,
    exp.Sum,
    exp.Avg,
    exp.Min,
    exp.Max,
    exp.CountIf,
    exp.Stddev,
    exp.StddevPop,
    exp.StddevSamp,
    exp.Variance,
    exp.VariancePop,
    exp.LogicalAnd,
    exp.LogicalOr,
    exp.ArrayAgg,
    exp.ArrayUniqueAgg,
    exp.ApproxDistinct,
)


def _guard(arg: exp.Expression, condition: exp.Expression) -> exp.Expression:
    """`CASE WHEN condition THEN arg END` (a `*` becomes the constant 1)."""
    value = exp.Literal.number(1) if isinstance(arg, exp.Star) else arg.copy()
    return exp.Case(ifs=[exp.If(this=condition.copy(), true=value)])


def _guarded_call(call: exp.Expression, condition: exp.Expression) -> exp.Expression:
    """`call` with each of its arguments guarded by `condition`."""
    call = call.copy()
    arg = call.this
    if isinstance(arg, exp.Distinct):
        arg.set("expressions", [_guard(e, condition) for e in arg.expressions])
    elif arg is not None:
        call.set("this", _guard(arg, condition))
    if call.args.get("expressions"):
        call.set("expressions", [_guard(e, condition) for e in call.expressions])
    return call


def _count_if(call: exp.CountIf) -> exp.Expression:
    return exp.Count(this=_guard(exp.Star(), call.this), big_int=True)


def unfilter(tree: exp.Expression, model: str) -> exp.Expression:
    """Rewrite every FILTER clause and `count_if` of `tree` into guarded plain aggregates.

    >>> import sqlglot
    >>> q = sqlglot.parse_one("select count(*) filter (where x > 0) n from t", dialect="spark")
    >>> unfilter(q, "m").sql("spark")
    'SELECT COUNT(CASE WHEN x > 0 THEN 1 END) AS n FROM t'
    """

    def rewrite(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Filter):
            call, where = node.this, node.expression
            condition = where.this if isinstance(where, exp.Where) else where
            if not isinstance(call, NULL_SKIPPING):
                name = call.sql_name() if isinstance(call, exp.Func) else type(call).__name__
                raise UnsupportedQueryError(
                    model,
                    f"a FILTER clause on {name.lower()}() (it does not skip NULLs, so the filter "
                    "cannot be folded into its argument)",
                    node.sql(dialect="spark")[:120],
                    "Filter the rows in WHERE or in an upstream model instead.",
                )
            if isinstance(call, exp.CountIf):
                return _count_if(exp.CountIf(this=exp.and_(call.this, condition)))
            return _guarded_call(call, condition)
        if isinstance(node, exp.CountIf):
            return _count_if(node)
        return node

    return tree.transform(rewrite, copy=True)
