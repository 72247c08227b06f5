"""version diff: the change of any Iceberg table as the bag difference of two versions.

For tables with merge-on-read delete files (the changelog scan refuses them) and for a
watermark that is no longer an ancestor of the current snapshot (a rollback): every row of
the new version with weight +1, every row of the old one with -1, compacted by
`weights.weighted_log`. It reads both versions in full.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.capture.weights import weighted_log
from dbt.adapters.spark_ivm.compiler.templates import col, table


def log_select(relation: str, old: int | None, new: int, columns: Sequence[str]) -> exp.Select:
    """new - old as weighted rows: the bag difference of two versions (a full scan of both)."""

    def version(snap: int | None, weight: int) -> exp.Select:
        select = (
            exp.Select()
            .select(*(col(c) for c in columns))
            .select(exp.alias_(exp.Literal.number(weight), "__ivm_cw", quoted=True))
        )
        if snap is None:
            return select.from_(table(relation)).where(exp.false())
        src = exp.Table(
            this=exp.to_identifier(relation.split(".")[1], quoted=True),
            db=exp.to_identifier(relation.split(".")[0], quoted=True),
            version=exp.Version(this="VERSION", kind="AS OF", expression=exp.Literal.number(snap)),
        )
        return select.from_(src)

    union = exp.union(version(new, 1), version(old, -1), distinct=False)
    return weighted_log(union, columns, col("__ivm_cw"))
