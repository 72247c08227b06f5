"""Aggregate rules: the helper columns each aggregate keeps in the state table and how a
weighted delta folds into them.

Notation: a group's delta is the bag of changed input rows with weights w (+n inserted, -n
deleted); `s` is the stored state row, `d` the aggregated delta row of the same group.
Every rule is a small class; `rule_for` picks it. The group's row count `__ivm_count__`
(= count(*)) is kept by the plan itself: count' = s.count + sum(w); a group whose count
reaches 0 is deleted.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.ir import AggKind, Aggregate
from dbt.adapters.spark_ivm.compiler.templates import col, template

COUNT = "__ivm_count__"
RECOMPUTE_FLAG = "__ivm_recompute"
RECOMPUTED = "__ivm_rc_"  # prefix of the recomputed helper values joined to the delta


def _decimal(type_name: str) -> tuple[int, int] | None:
    """(precision, scale) of a Spark decimal type name such as `decimal(10,2)`, else None."""
    if not type_name:
        return None
    dtype = exp.DataType.build(type_name, dialect="spark")
    if dtype.this != exp.DataType.Type.DECIMAL:
        return None
    p, s = (int(e.this.name) for e in dtype.expressions) if dtype.expressions else (10, 0)
    return p, s


@dataclass
class AggregateRule:
    """Base rule: what one aggregate call keeps and how it is maintained.

    `index` numbers the aggregate within the model; `arg_type` is Spark's type of its argument.
    """

    index: int
    agg: Aggregate
    arg_type: str | None = None

    @property
    def arg_column(self) -> str:
        """The delta-input column that carries this aggregate's argument value."""
        return f"__ivm_a{self.index}"

    def name(self, role: str) -> str:
        return f"__ivm_{role}_{self.index}"

    def state_columns(self) -> list[str]:
        raise NotImplementedError

    def initial(self) -> dict[str, exp.Expression]:
        """Helper values over base rows (`GROUP BY` the keys): used to build the state."""
        raise NotImplementedError

    def delta(self, w: exp.Expression) -> dict[str, exp.Expression]:
        """Helper values over the weighted delta rows of a group."""
        raise NotImplementedError

    def merged(self, s: str, d: str) -> dict[str, exp.Expression]:
        """New helper values of a stored group `s` after folding in its delta `d`."""
        raise NotImplementedError

    def inserted(self, d: str) -> dict[str, exp.Expression]:
        """Helper values of a group that is new in this refresh."""
        return {c: col(c, d) for c in self.state_columns()}

    def needs_recompute(self, s: str, d: str) -> exp.Expression | None:
        """When the group must be recomputed from the base tables (None: never)."""
        return None

    def recompute(self) -> dict[str, exp.Expression]:
        """Helper values recomputed over base rows of a flagged group."""
        return {}

    def visible(self) -> exp.Expression:
        """The aggregate's value, computed from the state row (unqualified columns)."""
        raise NotImplementedError

    def arg(self) -> exp.Expression:
        assert self.agg.arg is not None
        return self.agg.arg


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


class SumRule(AggregateRule):
    """sum(x): sum' = sum + sum(w * x), nn' = nn + sum(w * [x not null]); sum(x) is NULL when nn = 0.

    Example: x {2, 5}; delete 5 -> sum 2, nn 1; delete 2 -> nn 0 -> sum(x) IS NULL.
    """

    def _input(self, x: exp.Expression) -> exp.Expression:
        return x

    def state_columns(self) -> list[str]:
        return [self.name("sum"), self.name("nn")]

    def initial(self) -> dict[str, exp.Expression]:
        x = self._input(self.arg())
        return {
            self.name("sum"): template("SUM(:x)", x=x),
            self.name("nn"): template("COUNT(:x)", x=x),
        }

    def delta(self, w: exp.Expression) -> dict[str, exp.Expression]:
        x = self._input(col(self.arg_column))
        return {
            self.name("sum"): template("SUM(:x * :w)", x=x, w=w),
            self.name("nn"): template("SUM(CASE WHEN :x IS NULL THEN 0 ELSE :w END)", x=x, w=w),
        }

    def merged(self, s: str, d: str) -> dict[str, exp.Expression]:
        total, nn = self.name("sum"), self.name("nn")
        return {
            total: template(
                "CASE WHEN :snn + :dnn = 0 THEN NULL ELSE COALESCE(:s, 0) + COALESCE(:d, 0) END",
                snn=col(nn, s), dnn=col(nn, d), s=col(total, s), d=col(total, d),
            ),
            nn: template(":s + :d", s=col(nn, s), d=col(nn, d)),
        }  # fmt: skip

    def visible(self) -> exp.Expression:
        return template(
            "CASE WHEN :nn = 0 THEN NULL ELSE :s END",
            nn=col(self.name("nn")),
            s=col(self.name("sum")),
        )


class AvgRule(SumRule):
    """avg(x) = sum / nn, kept as SumRule's helpers; NULL when nn = 0.

    Spark averages a decimal(p,s) with a decimal(p+10,s) sum divided by count as
    decimal(20,0) and cast to decimal(p+4,s+4); anything else as double sum / double count.
    The visible expression repeats exactly that, so the view has Spark's value and type.
    Example: x {1, 2, 4}; delete 4 -> sum 3, nn 2 -> avg 1.5.
    """

    def _input(self, x: exp.Expression) -> exp.Expression:
        if _decimal(self.arg_type or ""):
            return x
        return exp.cast(x, exp.DataType.build("double"))

    def visible(self) -> exp.Expression:
        nn, total = col(self.name("nn")), col(self.name("sum"))
        dec = _decimal(self.arg_type or "")
        if dec:
            p, s = dec
            result = exp.DataType.build(f"decimal({min(38, p + 4)},{min(38, s + 4)})")
            value = exp.cast(template(":s / CAST(:nn AS DECIMAL(20,0))", s=total, nn=nn), result)
        else:
            value = template(":s / CAST(:nn AS DOUBLE)", s=total, nn=nn)
        return template("CASE WHEN :nn = 0 THEN NULL ELSE :v END", nn=nn, v=value)


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


class RecomputeRule(AggregateRule):
    """Aggregates that do not decompose (count(DISTINCT x), percentile, stddev, ...):
    affected-key recompute. Every group that occurs in the delta is recomputed from the new
    base tables restricted to its key; other groups are not read.

    Example: count(DISTINCT x) of group 'a' = 2; insert x=7 into 'a' -> 'a' recomputed = 3.
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


_RULES: dict[AggKind, type[AggregateRule]] = {
    AggKind.COUNT_STAR: CountStarRule,
    AggKind.COUNT: CountRule,
    AggKind.SUM: SumRule,
    AggKind.AVG: AvgRule,
    AggKind.MIN: ExtremeRule,
    AggKind.MAX: ExtremeRule,
    AggKind.RECOMPUTE: RecomputeRule,
}


def rule_for(index: int, agg: Aggregate, arg_type: str | None) -> AggregateRule:
    """The rule that maintains `agg` (the `index`-th aggregate of the model)."""
    return _RULES[agg.kind](index, agg, arg_type)
