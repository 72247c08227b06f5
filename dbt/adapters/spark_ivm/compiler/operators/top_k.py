"""top_k: a model's `ORDER BY .. LIMIT k`, kept as the unlimited result and limited in its view.

A top-k's first k rows change when any row above the k-th changes, and after a delete the
(k+1)-th row must be at hand to refill them; keeping every row of the unlimited result is
the state that always has it. So the model's SELECT without its ORDER BY and LIMIT is
maintained as any model is, and the model's relation is its view limited again:

    model:  SELECT k, sum(x) s FROM r GROUP BY k ORDER BY s DESC, k LIMIT 10
    state:  SELECT k, sum(x) s FROM r GROUP BY k              (maintained as usual)
    view:   SELECT * FROM (<the state's view>) ivm_top ORDER BY s DESC, k LIMIT 10

The view equals the model's SELECT wherever the ORDER BY is total (ties at the k-th row are
Spark's arbitrary choice, in a fresh run as in the view). The ORDER BY must name result
columns (by alias, position, or the expression a result column is): the view only has those.
Refused: LIMIT without ORDER BY (which k rows is unspecified), OFFSET, and a LIMIT on a set
operation or a sub-query (`analyze`).

    >>> top = split("SELECT t.k AS k, SUM(t.x) AS s FROM db.t AS t GROUP BY t.k "
    ...             "ORDER BY s DESC, t.k LIMIT 10", "m")
    >>> top.inner
    'SELECT t.k AS k, SUM(t.x) AS s FROM db.t AS t GROUP BY t.k'
    >>> top.limited("SELECT k, s FROM st")
    'SELECT * FROM (SELECT k, s FROM st) AS ivm_top ORDER BY `s` DESC, `k` LIMIT 10'
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from dbt.adapters.spark_ivm.compiler.errors import UnsupportedQueryError, fragment
from dbt.adapters.spark_ivm.compiler.sql.dialect import DIALECT

ALIAS = "ivm_top"


@dataclass(frozen=True)
class TopK:
    """The unlimited SELECT (`inner`) and the ORDER BY .. LIMIT its view applies (`suffix`)."""

    inner: str
    order: exp.Order | None
    limit: exp.Limit | None

    @property
    def suffix(self) -> str:
        """` ORDER BY .. LIMIT k` (empty without a top): part of the model's digest."""
        if self.order is None or self.limit is None:
            return ""
        return f" {self.order.sql(dialect=DIALECT)} {self.limit.sql(dialect=DIALECT)}"

    def limited(self, view_select: str) -> str:
        """The view of the model: its state's view SELECT, ordered and limited."""
        if not self.suffix:
            return view_select
        return f"SELECT * FROM ({view_select}) AS {ALIAS}{self.suffix}"


def _named(node: exp.Expression, outputs: list[exp.Expression]) -> exp.Expression | None:
    """The result column an ORDER BY term reads, by its name (None: no result column)."""
    names = {o.alias_or_name.lower(): o.alias_or_name for o in outputs if o.alias_or_name}
    if isinstance(node, exp.Literal) and node.is_int and 1 <= int(node.name) <= len(outputs):
        node = exp.column(outputs[int(node.name) - 1].alias_or_name)  # ORDER BY 2
    if isinstance(node, exp.Column) and not node.table and node.name.lower() in names:
        return exp.column(names[node.name.lower()], quoted=True)
    for output in outputs:
        if output.alias_or_name and output.unalias() == node:
            return exp.column(output.alias_or_name, quoted=True)
    return None


def split(compiled_sql: str, model: str) -> TopK:
    """The model's SQL without a top-level ORDER BY .. LIMIT, and that top (or none)."""
    try:
        tree = sqlglot.parse_one(compiled_sql, dialect=DIALECT)
    except ParseError:
        return TopK(compiled_sql, None, None)  # analyze names the parse error
    limit = tree.args.get("limit")
    if not isinstance(tree, exp.Select) or limit is None or tree.args.get("offset"):
        return TopK(compiled_sql, None, None)
    order = tree.args.get("order")
    if order is None:
        return TopK(compiled_sql, None, None)  # analyze refuses LIMIT without ORDER BY
    if any(isinstance(e, exp.Star) or e.is_star for e in tree.expressions):
        raise UnsupportedQueryError(
            model,
            "ORDER BY .. LIMIT over SELECT * (the view orders by named result columns)",
            fragment(order),
            "Name the result columns.",
        )
    terms = []
    for ordered in order.expressions:
        named = _named(ordered.this, list(tree.expressions))
        if named is None:
            raise UnsupportedQueryError(
                model,
                "ORDER BY .. LIMIT over an expression that is not a result column",
                fragment(ordered),
                "Add it to the select list (a downstream model can drop it).",
            )
        copy = ordered.copy()
        copy.set("this", named)
        terms.append(copy)
    inner = tree.copy()
    inner.set("order", None)
    inner.set("limit", None)
    return TopK(inner.sql(dialect=DIALECT), exp.Order(expressions=terms), limit.copy())
