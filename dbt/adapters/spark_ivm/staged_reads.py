"""staged_reads: an Iceberg table at one snapshot, read through a chosen set of its data files.

A merge-on-read base's change is the version diff of the data files its window touched
(`compiler/capture/merge_on_read.py`). In SQL a `_file` predicate is not pushed into Iceberg's
scan, so both versions are read whole to keep a few files' rows. Iceberg's own rewrite
actions read a chosen set of files another way: they plan the table's scan, keep the tasks
they want, stage them under an id (`ScanTaskSetManager`) and read the table with the read
option `scan-task-set-id`. Each planned task carries the delete files that apply to its data
file at the planned snapshot, the table's current schema projects old files by field id, and
identity partition values come from the metadata, so a staged read returns exactly the rows
`VERSION AS OF` would, of those files only.

Session method only (the staged tasks live in the driver's JVM). Every function returns None
where it cannot, and the caller reads both versions in SQL.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dbt.adapters.spark_ivm.compiler.capture.position_deletes import POSITION
from dbt.adapters.spark_ivm.compiler.capture.touched_files import FILE
from dbt.adapters.spark_ivm.compiler.sql.templates import sql, table
from dbt.adapters.spark_ivm.java_classes import java_class
from dbt.adapters.spark_ivm.session_metadata import iceberg_table

#: Iceberg's read option naming a staged task set (`SparkReadOptions.SCAN_TASK_SET_ID`).
TASK_SET_OPTION = "scan-task-set-id"
#: Iceberg's registry of staged task sets, which a read with that option takes its tasks from.
TASK_SET_MANAGER = "org.apache.iceberg.spark.ScanTaskSetManager"


@dataclass(frozen=True)
class StagedRead:
    """A staged task set: what `release` needs, and what the log line reports."""

    table: Any  # org.apache.iceberg.Table the tasks were staged for
    set_id: str  # "" where no file was kept (and nothing staged)
    kept: int  # data files read
    planned: int  # data files of the table at the snapshot


def stage(
    spark: Any,
    relation: str,
    snapshot: int,
    keep: Callable[[str], bool],
    view_name: str,
    positions: bool = False,
) -> StagedRead | None:
    """Plan `relation`'s scan at `snapshot`, stage the tasks of the data files whose path
    `keep` accepts, and name their read `view_name` (a session temp view; with `positions`
    it has Iceberg's `_file` and `_pos` too); None where this session cannot (then nothing
    is staged)."""
    try:
        iceberg = iceberg_table(spark, relation)
        tasks = java_class(spark, "java.util.ArrayList")()
        planned = 0
        files = iceberg.newScan().useSnapshot(snapshot).planFiles()
        try:
            iterator = files.iterator()
            while iterator.hasNext():
                task = iterator.next()
                planned += 1
                if keep(str(task.file().location())):
                    tasks.add(task)
        finally:
            files.close()
        if tasks.isEmpty():
            # Iceberg stages no empty set: no file kept reads no row (the current schema,
            # as a staged read's)
            _name(spark.read.table(sql(table(relation))).limit(0), positions, view_name)
            return StagedRead(iceberg, "", 0, planned)
        set_id = f"ivm-{uuid.uuid4()}"
        java_class(spark, TASK_SET_MANAGER).get().stageTasks(iceberg, set_id, tasks)
        staged = StagedRead(iceberg, set_id, int(tasks.size()), planned)
        try:
            # the table `iceberg_table` resolved, by the same name: its catalog's scan builder
            # takes the option (`format("iceberg").load(name)` wants a catalog of Iceberg's)
            read = spark.read.option(TASK_SET_OPTION, set_id).table(sql(table(relation)))
            _name(read, positions, view_name)
        except Exception:
            release(spark, staged)
            raise
    except Exception:  # noqa: BLE001 - e.g. not an Iceberg table: SQL reads both versions
        return None
    return staged


def _name(read: Any, positions: bool, view_name: str) -> None:
    """Name a table read `view_name`, with Iceberg's `_file` and `_pos` where `positions`."""
    if positions:
        read = read.select("*", FILE, POSITION)
    read.createOrReplaceTempView(view_name)


def release(spark: Any, staged: StagedRead) -> None:
    """Forget a staged task set (its read has been computed, or is abandoned)."""
    if not staged.set_id:
        return  # nothing was staged
    try:
        manager = java_class(spark, TASK_SET_MANAGER).get()
        manager.removeTasks(staged.table, staged.set_id)
    except Exception:  # noqa: BLE001, S110 - the set is a few task objects in the driver
        pass


def positions_view(spark: Any, paths: Sequence[str], view_name: str) -> bool:
    """Name the positions that the Parquet position delete files `paths` hold (`file_path`,
    `pos`) `view_name`, a session temp view; False where this session cannot read them."""
    try:
        read = spark.read.parquet(*paths).select("file_path", "pos")
        read.createOrReplaceTempView(view_name)
    except Exception:  # noqa: BLE001 - e.g. a file system only Iceberg's FileIO reads
        return False
    return True
