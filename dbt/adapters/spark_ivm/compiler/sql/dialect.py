"""dialect: Spark SQL as the compiler parses it, with every Spark aggregate function known.

sqlglot's Spark dialect parses some of Spark's aggregate functions as anonymous calls
(`mean(x)`, `std(x)`, `every(b)`, `some(b)`, `try_sum(x)`, ...). An anonymous call is no
aggregate to the compiler, so `select mean(x) from t` read as a plain SELECT of one column
per row, and `mean(x)` beside a GROUP BY as a column that is not grouped. Here each of them
parses as the aggregate it is: the synonyms as their sqlglot classes (kept by their
rules: `mean` by avg's, `std` by stddev's), the others as `AnonymousAggFunc`, which the
rules recompute per affected group.

    >>> import sqlglot
    >>> sqlglot.parse_one("select mean(x), try_sum(x) from t", dialect="spark").sql("spark")
    'SELECT AVG(x), TRY_SUM(x) FROM t'
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp
from sqlglot.dialects.spark import Spark

DIALECT = "spark"

#: Spark synonyms of aggregates that sqlglot knows under another name.
SYNONYMS: dict[str, type[exp.Func]] = {
    "MEAN": exp.Avg,
    "STD": exp.StddevSamp,
    "EVERY": exp.LogicalAnd,
    "SOME": exp.LogicalOr,
}
#: Spark 3.5 aggregate functions sqlglot has no class for (found by listing the functions
#: whose class is an AggregateFunction and parsing a call of each).
OTHER_AGGREGATES = (
    "TRY_SUM",
    "TRY_AVG",
    "COUNT_MIN_SKETCH",
    "HISTOGRAM_NUMERIC",
    "HLL_SKETCH_AGG",
    "HLL_UNION_AGG",
)


def _anonymous_aggregate(name: str) -> Callable[[list[exp.Expression]], exp.Expression]:
    def build(args: list[exp.Expression]) -> exp.Expression:
        return exp.AnonymousAggFunc(this=name, expressions=args)

    return build


def _register() -> None:
    functions = Spark.Parser.FUNCTIONS
    for name, cls in SYNONYMS.items():
        functions.setdefault(name, cls.from_arg_list)
    for name in OTHER_AGGREGATES:
        functions.setdefault(name, _anonymous_aggregate(name))


_register()


def any_as_bool_or(tree: exp.Expression) -> exp.Expression:
    """`any(b)` (Spark's bool_or) parses as sqlglot's quantifier `ANY`; outside a comparison
    it is the aggregate."""

    def rewrite(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Any) and not isinstance(node.parent, exp.Binary):
            inner = node.this.this if isinstance(node.this, exp.Paren) else node.this
            return exp.LogicalOr(this=inner.copy())
        return node

    return tree.transform(rewrite, copy=True)
