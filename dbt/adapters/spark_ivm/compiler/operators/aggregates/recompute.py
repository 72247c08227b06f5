"""recompute: aggregates that do not decompose, recomputed per affected group."""

from __future__ import annotations

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.operators.aggregates.rule import (
    RECOMPUTED,
    AggregateRule,
)
from dbt.adapters.spark_ivm.compiler.sql.templates import col


class RecomputeRule(AggregateRule):
    """Aggregates that do not decompose (count(DISTINCT x), percentile, stddev, ...):
    affected-key recompute. Every group that occurs in the delta is recomputed from the new
    base tables restricted to its key; other groups are not read.

    Example: count(DISTINCT x) of group 'a' = 2; insert x=7 into 'a' -> 'a' recomputed = 3.

    >>> from sqlglot import parse_one
    >>> from dbt.adapters.spark_ivm.compiler.ir import AggKind, Aggregate
    >>> from dbt.adapters.spark_ivm.compiler.sql.templates import sql
    >>> call = parse_one("count(distinct t.x)")
    >>> rule = RecomputeRule(2, Aggregate(AggKind.RECOMPUTE, call, parse_one("t.x")), "int")
    >>> rule.state_columns(), sql(rule.initial()["__ivm_val_2"])
    (['__ivm_val_2'], 'COUNT(DISTINCT t.x)')
    >>> sql(rule.needs_recompute("s", "d")), sql(rule.merged("s", "d")["__ivm_val_2"])
    ('TRUE', '`d`.`__ivm_rc___ivm_val_2`')
    """

    def state_columns(self) -> list[str]:
        return [self.name("val")]

    def initial(self) -> dict[str, exp.Expression]:
        return {self.name("val"): self.agg.call.copy()}

    recompute = initial

    def delta(self, w: exp.Expression) -> dict[str, exp.Expression]:
        return {}

    def needs_recompute(self, s: str, d: str) -> exp.Expression | None:
        return exp.true()

    def merged(self, s: str, d: str) -> dict[str, exp.Expression]:
        return {self.name("val"): col(RECOMPUTED + self.name("val"), d)}

    def inserted(self, d: str) -> dict[str, exp.Expression]:
        return self.merged("", d)

    def visible(self) -> exp.Expression:
        return col(self.name("val"))

    def referenced_columns(self) -> list[exp.Column]:
        """Columns the call reads: kept in the delta so that a changed value is not compacted
        away (an update of x inside one group must still trigger its recompute)."""
        seen: list[exp.Column] = []
        for c in self.agg.call.find_all(exp.Column):
            if c not in seen:
                seen.append(c)
        return seen
