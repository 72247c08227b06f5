"""capture: what changed in a base relation between a model's watermark and now.

A watermark is the Iceberg snapshot id a model last consumed of a base table. A refresh pins
the table's current snapshot (one consistent cut per refresh, Oracle's log snapshot) and writes
the compacted change between the two once into a log table that every step then reads
(only the columns the model reads: a projection of a weighted bag is its weighted
projection, and the other columns may not even be comparable, e.g. maps):

* changelog (`capture/changelog.py`): Iceberg's changelog scan between the two snapshots
  (copy-on-write tables; no extra writes by producers);
* version diff (`capture/version_diff.py`): `new EXCEPT ALL old` and `old EXCEPT ALL new` as
  one weighted GROUP BY, for tables with merge-on-read delete files, which the changelog scan
  refuses, and for a watermark that is no longer an ancestor of the current snapshot (a
  rollback); where the window's manifests bound the data files it touched
  (`capture/touched_files.py`), only their rows are paired, and where the connection can
  (the session method) only those files are read (`capture/merge_on_read.py`).

Either way the log holds each distinct changed row once with its net weight
(`__ivm_w`: +n inserted, -n deleted): a row inserted and deleted inside the window vanishes,
an update is -1 old row, +1 new row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from dbt.adapters.spark_ivm.compiler.errors import Refusal

#: Iceberg's stored procedures, unqualified: they resolve in the session's current catalog
#: (`spark.sql.defaultCatalog`: the session catalog or a named Iceberg catalog), where
#: dbt-spark's two-part names, and so every relation of a model, resolve too.
PROCEDURES = "system"


class CaptureMethod(str, Enum):
    NONE = "none"  # the pinned snapshot equals the watermark
    CHANGELOG = "changelog"
    VERSION_DIFF = "version_diff"


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: int
    parent_id: int | None
    delete_files: int
    operation: str = ""  # append, overwrite, delete, replace (a rewrite: no logical change)
    # Bytes of the files (data and delete) the commit added and removed, and of the table's
    # files after it, from the snapshot's summary: the change's size before any data is read
    # (`runtime/cost.py`).
    added_bytes: int = 0
    removed_bytes: int = 0
    total_bytes: int = 0
    # Delete files the commit added (equality ones apart) and the table's data files after
    # it: which data files a version diff must read again (`touched_bytes`).
    added_delete_files: int = 0
    added_equality_deletes: int = 0
    data_files: int = 0

    @property
    def touched_bytes(self) -> int:
        """Bytes of the data files the commit's delete files point at, which the version
        diff of a merge-on-read table reads at both versions (`touched_files.py`): one data
        file a delete file (Iceberg's file-scoped position deletes and deletion vectors),
        every data file for an equality delete, each of the average data file's size.

        >>> three = Snapshot(2, 1, 3, "overwrite", 10, 0, 1000, added_delete_files=3, data_files=10)
        >>> three.touched_bytes
        300
        >>> Snapshot(2, 1, 0, "overwrite", 10, 0, 1000, data_files=10).touched_bytes
        0
        """
        if self.data_files <= 0:
            return 0
        files = (
            self.data_files
            if self.added_equality_deletes
            else min(self.added_delete_files, self.data_files)
        )
        return self.total_bytes * files // self.data_files


def lineage(
    snapshots: Mapping[int, Snapshot], old: int | None, new: int | None
) -> list[Snapshot] | None:
    """The snapshots after `old` up to `new` (both ends: old excluded), or None when `old` is
    not an ancestor of `new` (the table was rolled back or replaced)."""
    if new is None:
        return [] if old is None else None
    chain: list[Snapshot] = []
    current: int | None = new
    while current is not None and current != old:
        snap = snapshots.get(current)
        if snap is None:
            return None
        chain.append(snap)
        current = snap.parent_id
    if current != old:
        return None
    return chain


def choose_method(
    snapshots: Mapping[int, Snapshot], old: int | None, new: int | None
) -> CaptureMethod | Refusal:
    """How to read the change old -> new, or why it cannot be read (then: rebuild).

    * old == new, or only `replace` snapshots (compactions: the same rows in other files)
      in between: no change;
    * old an ancestor of new: the changelog (the version diff where delete files are);
    * old still readable but not an ancestor (rolled back, or a branch made current): the
      version diff, which holds for any two versions;
    * old expired (`expire_snapshots`) or gone with its table: unreadable.
    """
    if old == new:
        return CaptureMethod.NONE
    if old is not None and old not in snapshots:
        return Refusal(f"its snapshot {old} that the state reflects was expired")
    if new is None:
        return Refusal("its rows were removed with their snapshots (the table has no snapshot now)")
    chain = lineage(snapshots, old, new)
    if chain is None:
        return CaptureMethod.VERSION_DIFF
    if all(s.operation == "replace" for s in chain):
        return CaptureMethod.NONE
    ends = [snapshots[old]] if old is not None else []
    if any(s.delete_files > 0 for s in [*chain, *ends]):
        return CaptureMethod.VERSION_DIFF
    return CaptureMethod.CHANGELOG
