"""version diff: the change of any Iceberg table as the bag difference of two versions.

For tables with merge-on-read delete files (the changelog scan refuses them) and for a
watermark that is no longer an ancestor of the current snapshot (a rollback): every row of
the new version with weight +1, every row of the old one with -1, compacted by
`weights.weighted_log`. It reads both versions in full; where the window's manifests say
which data files it touched (`touched_files.py`), only those files' rows are paired (and in
session mode only those files are read: `merge_on_read.py`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.capture.touched_files import Touched
from dbt.adapters.spark_ivm.compiler.capture.weights import weighted_log
from dbt.adapters.spark_ivm.compiler.sql.templates import col, null_safe_match, table


def weighted_rows(source: exp.Table, columns: Sequence[str], weight: int) -> exp.Select:
    """One side of a version diff: `columns` of `source` (aliased `__ivm_v`), each row with
    the weight `__ivm_cw` (+1 the new version, -1 the old)."""
    return (
        exp.Select()
        .select(*(col(c, "__ivm_v") for c in columns))
        .select(exp.alias_(exp.Literal.number(weight), "__ivm_cw", quoted=True))
        .from_(exp.alias_(source, "__ivm_v"))
    )


def log_select(
    relation: str,
    old: int | None,
    new: int,
    columns: Sequence[str],
    keyed: tuple[str, Sequence[str]] | None = None,
    exact: Collection[str] = (),
    touched: Touched | None = None,
) -> exp.Select:
    """new - old as weighted rows: the bag difference of two versions (a full scan of both).

    `keyed` = (relation K, key columns): only rows whose key columns match a row of K
    null-safely, for a table whose writer knows every key it changed in the window (an
    auxiliary state handing its change to the model, `chain.py`): the same log, without
    shuffling both versions whole. `touched`: only rows of the data files the window touched
    (`touched_files.py`; the others are the same in both versions).

    >>> text = log_select("db.t", 3, 5, ["k", "x"]).sql("spark")
    >>> for part in (" FROM (", " FROM `db`", " UNION ALL", " GROUP BY"):
    ...     text = text.replace(part, "\\n" + part.lstrip())
    >>> print(text)
    SELECT `k`, `x`, SUM(`__ivm_cw`) AS `__ivm_w`
    FROM (SELECT `__ivm_v`.`k`, `__ivm_v`.`x`, 1 AS `__ivm_cw`
    FROM `db`.`t` VERSION AS OF 5 AS __ivm_v
    UNION ALL SELECT `__ivm_v`.`k`, `__ivm_v`.`x`, -1 AS `__ivm_cw`
    FROM `db`.`t` VERSION AS OF 3 AS __ivm_v) AS __ivm_src
    GROUP BY `k`, `x` HAVING SUM(`__ivm_cw`) <> 0
    """

    def version(snap: int | None, weight: int) -> exp.Select:
        if snap is None:
            return weighted_rows(table(relation), columns, weight).where(exp.false())
        src = table(relation)
        src.set(
            "version",
            exp.Version(this="VERSION", kind="AS OF", expression=exp.Literal.number(snap)),
        )
        select = weighted_rows(src, columns, weight)
        if touched is not None:
            select = select.where(touched.side("__ivm_v", new=weight > 0))
        if keyed is not None:
            keys, names = keyed
            match = null_safe_match(
                [col(n, "__ivm_keys") for n in names], [col(n, "__ivm_v") for n in names]
            )
            changed = (
                exp.Select()
                .select(exp.Literal.number(1))
                .from_(exp.alias_(table(keys), "__ivm_keys"))
                .where(match)
            )
            select = select.where(exp.Exists(this=changed))
        return select

    union = exp.union(version(new, 1), version(old, -1), distinct=False)
    return weighted_log(union, columns, col("__ivm_cw"), exact)
