"""rule: what every aggregate rule provides, and the names the state and the delta share.

Notation: a group's delta is the bag of changed input rows with weights w (+n inserted, -n
deleted); `s` is the stored state row, `d` the aggregated delta row of the same group.
The group's row count `__ivm_count__` (= count(*)) is kept by the plan itself:
count' = s.count + sum(w); a group whose count reaches 0 is deleted.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.ir import Aggregate
from dbt.adapters.spark_ivm.compiler.sql.templates import col, template

COUNT = "__ivm_count__"
RECOMPUTE_FLAG = "__ivm_recompute"
RECOMPUTED = "__ivm_rc_"  # prefix of the recomputed helper values joined to the delta


def decimal_type(type_name: str) -> tuple[int, int] | None:
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

    def row_values(self, keys: list[exp.Expression]) -> dict[str, exp.Expression]:
        """Columns added to each compacted delta row before it is aggregated (window
        expressions over its group `keys`), for `delta` to read."""
        return {}

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

    def joined_flag(self, j: str) -> exp.Expression | None:
        """When the group must be recomputed, judged from this rule's `joined` values read
        by name from the row `j` (None: never). Cheaper than `needs_recompute` where the
        condition reads the folded values many times: each use would repeat their SQL."""
        return None

    def or_recomputed(
        self, column: str, d: str, value: exp.Expression, witness: str
    ) -> exp.Expression:
        """`column`'s recomputed value where the group was flagged and recomputed, else
        `value`. `witness` is a helper recomputed as a COUNT: never NULL in a recomputed
        group, NULL where no recompute joined the row."""
        return template(
            "CASE WHEN :flag AND :rc IS NOT NULL THEN :r ELSE :v END",
            flag=col(RECOMPUTE_FLAG, d), rc=col(RECOMPUTED + witness, d),
            r=col(RECOMPUTED + column, d), v=value,
        )  # fmt: skip

    def recompute(self) -> dict[str, exp.Expression]:
        """Helper values recomputed over base rows of a flagged group."""
        return {}

    def recomputed_names(self) -> list[str]:
        """The state columns a recompute of a flagged group sets."""
        return list(self.recompute())

    def delta_table_columns(self) -> list[str]:
        """The columns this rule adds to the delta table."""
        return list(self.delta(col("__ivm_w")))

    def joined(self, s: str, d: str) -> dict[str, exp.Expression]:
        """Columns computed where the aggregated delta `d` meets the stored row `s`."""
        return {}

    def late(self, j: str) -> dict[str, exp.Expression]:
        """The delta-table columns this rule derives one level above `joined`, from its
        `joined` values read by name from the row `j`; when not empty they replace the
        `joined` columns in the delta table. A value used several times is then written
        once: Spark analyses and optimises every copy of an expression again."""
        return {}

    def visible(self) -> exp.Expression:
        """The aggregate's value, computed from the state row (unqualified columns)."""
        raise NotImplementedError

    def arg(self) -> exp.Expression:
        assert self.agg.arg is not None
        return self.agg.arg
