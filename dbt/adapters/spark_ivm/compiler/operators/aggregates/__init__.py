"""Aggregate rules: the helper columns each aggregate keeps in the state table and how a
weighted delta folds into them.

Notation: a group's delta is the bag of changed input rows with weights w (+n inserted, -n
deleted); `s` is the stored state row, `d` the aggregated delta row of the same group.
Every rule is a small class in a module named for it (`counting`, `sums`, `extremes`,
`moments`, `recompute`); `rule_for` picks it. The group's row count `__ivm_count__`
(= count(*)) is kept by the plan itself: count' = s.count + sum(w); a group whose count
reaches 0 is deleted.
"""

from __future__ import annotations

from dbt.adapters.spark_ivm.compiler.ir import AggKind, Aggregate
from dbt.adapters.spark_ivm.compiler.operators.aggregates.counting import CountRule, CountStarRule
from dbt.adapters.spark_ivm.compiler.operators.aggregates.extremes import (
    KEEP,
    ExtremeRule,
    keep_from_env,
)
from dbt.adapters.spark_ivm.compiler.operators.aggregates.moments import MomentRule
from dbt.adapters.spark_ivm.compiler.operators.aggregates.recompute import RecomputeRule
from dbt.adapters.spark_ivm.compiler.operators.aggregates.rule import (
    COUNT,
    RECOMPUTE_FLAG,
    RECOMPUTED,
    AggregateRule,
)
from dbt.adapters.spark_ivm.compiler.operators.aggregates.sums import AvgRule, SumRule

__all__ = [
    "COUNT",
    "KEEP",
    "RECOMPUTED",
    "RECOMPUTE_FLAG",
    "AggregateRule",
    "AvgRule",
    "CountRule",
    "CountStarRule",
    "ExtremeRule",
    "MomentRule",
    "RecomputeRule",
    "SumRule",
    "keep_from_env",
    "rule_for",
]

_RULES: dict[AggKind, type[AggregateRule]] = {
    AggKind.COUNT_STAR: CountStarRule,
    AggKind.COUNT: CountRule,
    AggKind.SUM: SumRule,
    AggKind.AVG: AvgRule,
    AggKind.MIN: ExtremeRule,
    AggKind.MAX: ExtremeRule,
    AggKind.MOMENT: MomentRule,
    AggKind.RECOMPUTE: RecomputeRule,
}


def rule_for(index: int, agg: Aggregate, arg_type: str | None, keep: int = KEEP) -> AggregateRule:
    """The rule that maintains `agg` (the `index`-th aggregate of the model); `keep`: how
    many values a MIN/MAX state lists per group."""
    if agg.kind in (AggKind.MIN, AggKind.MAX):
        return ExtremeRule(index, agg, arg_type, keep)
    return _RULES[agg.kind](index, agg, arg_type)
