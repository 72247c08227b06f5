"""extremes: min(x) and max(x)."""

from __future__ import annotations

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.aggregates.rule import (
    RECOMPUTE_FLAG,
    RECOMPUTED,
    AggregateRule,
)
from dbt.adapters.spark_ivm.compiler.ir import AggKind
from dbt.adapters.spark_ivm.compiler.templates import col, template


class ExtremeRule(AggregateRule):
    """min(x) / max(x): inserted values fold in with least / greatest; when a deleted value
    is at or beyond the stored extreme the group is recomputed from the new base tables
    (PostgreSQL IVM's recalc_and_set_values), touching only those groups.

    Example (min): stored 3; insert 1 -> least(3, 1) = 1. Stored 3; delete 3 -> recompute.
    """

    @property
    def _is_min(self) -> bool:
        return self.agg.kind is AggKind.MIN

    def state_columns(self) -> list[str]:
        return [self.name("ext")]

    def initial(self) -> dict[str, exp.Expression]:
        return {self.name("ext"): self.agg.call.copy()}

    recompute = initial

    def delta(self, w: exp.Expression) -> dict[str, exp.Expression]:
        x = col(self.arg_column)
        fn = "MIN" if self._is_min else "MAX"
        return {
            self.name("ins"): template(f"{fn}(CASE WHEN :w > 0 THEN :x END)", w=w, x=x),
            self.name("del"): template(f"{fn}(CASE WHEN :w < 0 THEN :x END)", w=w, x=x),
        }

    def needs_recompute(self, s: str, d: str) -> exp.Expression | None:
        op = "<=" if self._is_min else ">="
        return template(
            f"COALESCE(:dl {op} :st, FALSE)",
            dl=col(self.name("del"), d),
            st=col(self.name("ext"), s),
        )

    def merged(self, s: str, d: str) -> dict[str, exp.Expression]:
        fn = "LEAST" if self._is_min else "GREATEST"  # both skip NULLs in Spark
        ext = self.name("ext")
        return {
            ext: template(
                f"CASE WHEN :flag THEN :rc ELSE {fn}(:s, :d) END",
                flag=col(RECOMPUTE_FLAG, d), rc=col(RECOMPUTED + ext, d), s=col(ext, s),
                d=col(self.name("ins"), d),
            )
        }  # fmt: skip

    def inserted(self, d: str) -> dict[str, exp.Expression]:
        return {self.name("ext"): col(self.name("ins"), d)}

    def visible(self) -> exp.Expression:
        return col(self.name("ext"))
