"""counting: count(*) and count(x)."""

from __future__ import annotations

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.operators.aggregates.rule import COUNT, AggregateRule
from dbt.adapters.spark_ivm.compiler.sql.templates import col, template


class CountStarRule(AggregateRule):
    """count(*) = __ivm_count__, the group's row count: count' = count + sum(w).

    Example: group 'a' with 3 rows; delta {+1, -1, -1} -> 3 + (1 - 1 - 1) = 2.
    """

    def state_columns(self) -> list[str]:
        return []

    def initial(self) -> dict[str, exp.Expression]:
        return {}

    def delta(self, w: exp.Expression) -> dict[str, exp.Expression]:
        return {}

    def merged(self, s: str, d: str) -> dict[str, exp.Expression]:
        return {}

    def visible(self) -> exp.Expression:
        return col(COUNT)


class CountRule(AggregateRule):
    """count(x): nn = number of non-NULL x; nn' = nn + sum(w * [x is not null]).

    Example: x values {1, NULL}; delete 1, insert NULL -> nn = 1 - 1 + 0 = 0.

    >>> from sqlglot import parse_one
    >>> from dbt.adapters.spark_ivm.compiler.ir import AggKind, Aggregate
    >>> from dbt.adapters.spark_ivm.compiler.sql.templates import sql
    >>> rule = CountRule(0, Aggregate(AggKind.COUNT, parse_one("count(t.x)"), parse_one("t.x")))
    >>> rule.state_columns(), sql(rule.initial()["__ivm_nn_0"])
    (['__ivm_nn_0'], 'COUNT(t.x)')
    >>> sql(rule.delta(exp.column("w"))["__ivm_nn_0"])  # the delta rows' x is __ivm_a0
    'SUM(CASE WHEN `__ivm_a0` IS NULL THEN 0 ELSE w END)'
    >>> sql(rule.merged("s", "d")["__ivm_nn_0"])
    '`s`.`__ivm_nn_0` + `d`.`__ivm_nn_0`'
    """

    def state_columns(self) -> list[str]:
        return [self.name("nn")]

    def initial(self) -> dict[str, exp.Expression]:
        return {self.name("nn"): template("COUNT(:x)", x=self.arg())}

    def delta(self, w: exp.Expression) -> dict[str, exp.Expression]:
        x = col(self.arg_column)
        return {self.name("nn"): template("SUM(CASE WHEN :x IS NULL THEN 0 ELSE :w END)", x=x, w=w)}

    def merged(self, s: str, d: str) -> dict[str, exp.Expression]:
        nn = self.name("nn")
        return {nn: template(":s + :d", s=col(nn, s), d=col(nn, d))}

    def visible(self) -> exp.Expression:
        return col(self.name("nn"))
