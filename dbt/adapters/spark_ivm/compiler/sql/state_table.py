"""state_table: the statements of a state table itself and of its metadata row.

A state table (`<model>__ivm_state`, and each sub-query or auxiliary state's) is an Iceberg
table with the plugin's properties (`STATE_PROPERTIES`: merge-on-read deletion vectors,
bounded metadata); its data rows have `__ivm_row__ = 0` and one metadata row
`__ivm_row__ = 1` holds the JSON of what the state reflects (`runtime/state_meta.py`), written
in the same commit as the rows. A build creates, replaces or overwrites the table in one
commit; a refresh's commit holds only while the metadata row is the one it read
(`meta_unchanged`). What the rows are is `render.py`'s.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.sql.layout import BOUNDED_METADATA, NO_LAYOUT, Layout
from dbt.adapters.spark_ivm.compiler.sql.templates import col, sql, table, template, text

ROW = "__ivm_row__"  # 0: a row of the view's state; 1: the metadata row
META = "__ivm_meta__"  # the metadata row's JSON: watermarks and SQL hash
#: Format 3: a MERGE marks the rows it replaces in deletion vectors, one per data file, which
#: a compaction's rewrite of that file drops with it (`upkeep.py`). Format 2's position delete
#: files needed `rewrite_position_delete_files`, which Iceberg 1.10 fails on tables with
#: array columns (MIN/MAX lists; apache/iceberg#15080).
STATE_FORMAT = "3"
STATE_PROPERTIES = {
    "format-version": STATE_FORMAT,
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
    **BOUNDED_METADATA,
}


def with_meta_row(rows: exp.Select, meta: str, columns: list[str]) -> exp.Expression:
    """`rows` (data rows of a state being built) UNION ALL the metadata row holding `meta`,
    NULL in every other state column (`columns`, after ROW and META)."""
    meta_row = exp.Select().select(
        exp.alias_(exp.Literal.number(1), ROW, quoted=True),
        exp.alias_(text(meta), META, quoted=True),
        *(exp.alias_(exp.null(), name, quoted=True) for name in columns),
    )
    return exp.union(rows, meta_row, distinct=False)


def create_state_sql(
    state: str, select: exp.Expression, layout: Layout = NO_LAYOUT, partitions: Sequence[str] = ()
) -> list[str]:
    """Drop any old state table, then create the new one (Iceberg, merge-on-read; the model's
    table configs as `layout` says, partitioned by the state columns `partitions`).

    Not `CREATE OR REPLACE`: a model edited between runs (a group key added, `sum` made
    `avg`) changes the state's columns, and the Hive metastore refuses to replace a table's
    schema with incompatible column types (`CommitStateUnknownException`), which left even
    `--full-refresh` failing. A build drops the model's relation anyway.
    """
    create = layout.create_sql(state, STATE_PROPERTIES, partitions)
    return [drop_state_sql(state), f"{create} AS {sql(select)}"]


def replace_state_sql(
    state: str, select: exp.Expression, layout: Layout = NO_LAYOUT, partitions: Sequence[str] = ()
) -> str:
    """Replace a state table by a new one, columns and all, in one Iceberg commit (`CREATE OR
    REPLACE TABLE .. AS`): readers see the old table until the new one is complete.

    A metastore that refuses to change a column's type in place
    (`hive.metastore.disallow.incompatible.col.type.changes`) refuses this where the columns
    change; the build then drops and creates the state (`create_state_sql`).
    """
    create = layout.create_sql(state, STATE_PROPERTIES, partitions, replace=True)
    return f"{create} AS {sql(select)}"


def overwrite_state_sql(state: str, select: exp.Expression) -> str:
    """Replace every row of a state whose columns are the ones `select` gives (the same plan
    over the same inputs) in one Iceberg commit: readers see the old rows or the new."""
    return f"INSERT OVERWRITE {sql(table(state))} {sql(select)}"


def drop_state_sql(state: str) -> str:
    """Drop a state table and its files."""
    return f"DROP TABLE IF EXISTS {sql(table(state))} PURGE"


def meta_sql(state: str) -> str:
    return f"SELECT {META} FROM {sql(table(state))} WHERE {ROW} = 1"


def _meta_is(read: str) -> exp.Expression:
    """The condition on a state row: it is the metadata row and its text is `read`, compared
    by SHA-256 (which keeps the statement short)."""
    digest = hashlib.sha256(read.encode("utf-8")).hexdigest()
    return template(
        ":row = 1 AND SHA2(:meta, 256) = :digest", row=col(ROW), meta=col(META), digest=text(digest)
    )


def meta_unchanged(state: str, read: str | None) -> exp.Expression | None:
    """True while the state's metadata row is still `read`, the row this run read its
    watermarks from (None: no other process can commit to the state, no guard). A refresh's
    commit holds it in the same statement: a run that read the watermarks before another run
    of the model committed applies nothing (its delta is the other's), where Iceberg alone
    sees no conflict once its MERGE starts after that commit.

    >>> print(sql(meta_unchanged("db.m", '{"watermarks": {}}')))  # doctest: +ELLIPSIS
    EXISTS(SELECT 1 FROM `db`.`m` WHERE `__ivm_row__` = 1 AND SHA2(`__ivm_meta__`, 256) = 'e91c...')
    >>> meta_unchanged("db.m", None) is None
    True
    """
    if read is None:
        return None
    probe = exp.Select().select(exp.Literal.number(1)).from_(table(state)).where(_meta_is(read))
    return exp.Exists(this=probe)


def advance_meta_sql(state: str, meta: str, read: str | None) -> str:
    """Advance only the watermarks (the changes did not affect the view): one commit, of the
    metadata row as it was read (`read`; no row is updated when another run moved it; None:
    no other run can).

    >>> print(advance_meta_sql("db.m", "{}", None))
    UPDATE `db`.`m` SET __ivm_meta__ = '{}' WHERE __ivm_row__ = 1
    """
    update = f"UPDATE {sql(table(state))} SET {META} = {sql(text(meta))}"
    if read is None:
        return f"{update} WHERE {ROW} = 1"
    return f"{update} WHERE {sql(_meta_is(read))}"
