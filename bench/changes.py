"""One round of changes to every base table: inserts, updates and deletes, one MERGE a table.

For change fraction f a table of n rows gets k = max(1, round(f * n)) changed rows: about a
third each inserted, updated and deleted (one row: an update). Inserted rows have new keys
beyond the largest (new orders come with their lines); updated rows get new measures AND new
group columns (return flag and line status, order status, a customer's nation and segment,
a nation's name); deleted rows are gone.

Which rows are updated or deleted is the `pattern`:

* `clustered` (default): a contiguous key range at a random place, of the size that holds the
  rows to change; inside it a hash decides update or delete. An OLTP feed mostly touches
  recent or adjacent keys, and on a copy-on-write table this rewrites only the few files that
  hold the range (on a merge-on-read one it writes a position delete file for them).
* `scattered`: rows drawn by a hash of the key all over the table. Single-row changes spread
  over every file make copy-on-write rewrite (and change capture read) most of the table.

Each table's changes are one MERGE (one Iceberg snapshot a table and round): copy-on-write or
merge-on-read as the table's properties say (`datagen.BaseTable.ddl`).
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from bench.datagen import (
    CUSTOMERS_TABLE,
    LINEITEM_TABLE,
    MEAN_LINES_PER_ORDER,
    NATIONS_TABLE,
    ORDERS_TABLE,
    TABLES,
    BaseTable,
    Scale,
)
from bench.draws import keyed_hash
from bench.load import file_count

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

Pattern = Literal["clustered", "scattered"]
PATTERNS: tuple[Pattern, ...] = ("clustered", "scattered")

#: The source column of a change MERGE that says what to do with the row.
OP = "bench_op"


@dataclass(frozen=True)
class Split:
    """How many rows of a table a round inserts, updates and deletes."""

    inserts: int
    updates: int
    deletes: int


def split(rows: int, fraction: float) -> Split:
    """A third each of max(1, round(fraction * rows)) changes (updates get the remainder)."""
    k = max(1, round(fraction * rows))
    updates = math.ceil(k / 3)
    deletes = (k - updates) // 2
    return Split(inserts=k - updates - deletes, updates=updates, deletes=deletes)


@dataclass(frozen=True)
class TableChange:
    """What a round did to one table (row counts as applied, from the MERGE source)."""

    table: str
    inserted: int
    updated: int
    deleted: int
    rows_before: int
    files_before: int
    files_after: int
    rewritten_files: int  # data files the MERGE replaced (copy-on-write)
    added_delete_files: int  # position delete files the MERGE wrote (merge-on-read)
    delete_files_after: int  # live delete files of the table after the MERGE
    seconds: float


@dataclass(frozen=True)
class _Stats:
    rows: int
    low: int
    high: int


def _stats(spark: SparkSession, table: BaseTable) -> _Stats:
    k = table.range_key
    row = spark.sql(f"SELECT count(*), min({k}), max({k}) FROM {table.qualified}").collect()[0]
    return _Stats(int(row[0]), int(row[1] or 0), int(row[2] or 0))


def _selection(
    table: BaseTable, stats: _Stats, rows: int, pattern: Pattern, seed: str, rng: random.Random
) -> str:
    """Condition on the table's rows choosing about `rows` of them to update or delete."""
    if pattern == "scattered":
        return f"pmod({keyed_hash(seed, 'pick', table.key)}, {max(1, stats.rows)}) < {rows}"
    span = stats.high - stats.low + 1
    width = min(span, math.ceil(rows * span / max(1, stats.rows)))
    start = stats.low + rng.randint(0, span - width)
    return f"{table.range_key} >= {start} AND {table.range_key} < {start + width}"


def change_source(
    table: BaseTable,
    seed: str,
    scale: Scale,
    selection: str | None,
    plan: Split,
    inserted: str | None,
) -> str:
    """The rows of one round's MERGE: updated and deleted ones among `selection` (new values
    for the updated), the `inserted` ones; column `bench_op` says which (U, D, I)."""
    sources: list[str] = []
    if selection is not None:
        chosen = plan.updates + plan.deletes
        is_update = f"pmod({keyed_hash(seed, 'op', table.key)}, {chosen}) < {plan.updates}"
        new = table.updated(seed, scale)
        values = ", ".join(f"{new.get(c, c)} AS {c}" for c in table.column_names)
        sources.append(
            f"SELECT 'U' AS {OP}, {values} FROM {table.qualified} "
            f"WHERE ({selection}) AND {is_update}"
        )
        sources.append(
            f"SELECT 'D' AS {OP}, * FROM {table.qualified} WHERE ({selection}) AND NOT {is_update}"
        )
    if inserted is not None:
        sources.append(f"SELECT 'I' AS {OP}, * FROM ({inserted})")
    return " UNION ALL ".join(sources)


def merge_sql(table: BaseTable, source: str) -> str:
    """MERGE the rows of `change_source` into the table by its key."""
    on = " AND ".join(f"t.{k} = s.{k}" for k in table.key)
    assignments = ", ".join(f"t.{c} = s.{c}" for c in table.column_names if c not in table.key)
    columns = ", ".join(table.column_names)
    values = ", ".join(f"s.{c}" for c in table.column_names)
    return (
        f"MERGE INTO {table.qualified} t USING ({source}) s ON {on} "
        f"WHEN MATCHED AND s.{OP} = 'D' THEN DELETE "
        f"WHEN MATCHED AND s.{OP} = 'U' THEN UPDATE SET {assignments} "
        f"WHEN NOT MATCHED AND s.{OP} = 'I' THEN INSERT ({columns}) VALUES ({values})"
    )


def _last_commit(spark: SparkSession, table: BaseTable) -> tuple[int, int, int]:
    """The table's last snapshot: data files it removed (rewritten by copy-on-write), delete
    files it added (merge-on-read), and the table's live delete files after it."""
    rows = spark.sql(
        f"SELECT summary['deleted-data-files'], summary['added-delete-files'], "
        f"summary['total-delete-files'] FROM {table.qualified}.snapshots "
        "ORDER BY committed_at DESC LIMIT 1"
    ).collect()
    if not rows:
        return 0, 0, 0
    removed, added, total = (int(v or 0) for v in rows[0])
    return removed, added, total


def apply_round(
    spark: SparkSession, seed: str, fraction: float, pattern: Pattern, parts: int
) -> list[TableChange]:
    """Change fraction `fraction` of every base table (nations first, lineitem last)."""
    rng = random.Random(seed)
    stats = {t.name: _stats(spark, t) for t in TABLES}
    plans = {t.name: split(stats[t.name].rows, fraction) for t in TABLES}
    customers = stats[CUSTOMERS_TABLE.name]
    # new customers may order at once; new orders (and their lines) get keys beyond any
    scale = Scale(max_custkey=customers.high + plans[CUSTOMERS_TABLE.name].inserts, parts=parts)
    next_order = max(stats[ORDERS_TABLE.name].high, stats[LINEITEM_TABLE.name].high) + 1
    changes: list[TableChange] = []
    for table in TABLES:
        start = time.perf_counter()
        plan, before = plans[table.name], stats[table.name]
        chosen = plan.updates + plan.deletes
        selection = (
            _selection(table, before, chosen, pattern, seed, rng)
            if chosen and before.rows
            else None
        )
        inserted = None
        if plan.inserts:
            if table is LINEITEM_TABLE:
                low, count = next_order, math.ceil(plan.inserts / MEAN_LINES_PER_ORDER)
            elif table is ORDERS_TABLE:
                low, count = next_order, plan.inserts
            else:
                first = 0 if table is NATIONS_TABLE and not before.rows else before.high + 1
                low, count = first, plan.inserts
            inserted = table.rows(seed, low, low + count, scale, 1)
        files_before = file_count(spark, table)
        source = change_source(table, seed, scale, selection, plan, inserted)
        counts = dict(spark.sql(f"SELECT {OP}, count(*) FROM ({source}) GROUP BY {OP}").collect())
        spark.sql(merge_sql(table, source))
        rewritten, added_deletes, live_deletes = _last_commit(spark, table)
        changes.append(
            TableChange(
                table=table.name,
                inserted=int(counts.get("I", 0)),
                updated=int(counts.get("U", 0)),
                deleted=int(counts.get("D", 0)),
                rows_before=before.rows,
                files_before=files_before,
                files_after=file_count(spark, table),
                rewritten_files=rewritten,
                added_delete_files=added_deletes,
                delete_files_after=live_deletes,
                seconds=time.perf_counter() - start,
            )
        )
    return changes
