"""file reads: a merge-on-read base's change read through some of its data files only.

Session method only (`FileScanReader`): each read is a scan planned at one snapshot and cut
down to chosen data files (`staged_reads.py`). Two ways, tried in this order by `logs.py`:

* `position_scans`: the rows the window's Parquet position delete files name, and the data
  files it added and removed (`capture/position_deletes.py`): each touched file scanned once,
  no pairing;
* `file_scans`: both versions of every touched file, paired by the version diff
  (`capture/merge_on_read.py`).

Each returns None where it cannot, and the next way (at last SQL over whole versions) reads
the change.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial

from dbt.adapters.spark_ivm.compiler.capture import position_deletes, touched_files
from dbt.adapters.spark_ivm.compiler.capture.position_deletes import Side
from dbt.adapters.spark_ivm.compiler.environment import number_from_env
from dbt.adapters.spark_ivm.compiler.runtime.executor import FileScanReader
from dbt.adapters.spark_ivm.compiler.runtime.session import Session
from dbt.adapters.spark_ivm.compiler.sql.templates import sql, table

#: Overrides `position_deletes.MIN_TOUCHED_BYTES` (`min_touched_bytes`).
MIN_TOUCHED_BYTES_ENV = "DBT_SPARK_IVM_POSITION_READ_MIN_BYTES"


def min_touched_bytes() -> int:
    """Bytes of data files a window's deletes must point at to be read by their positions
    (`DBT_SPARK_IVM_POSITION_READ_MIN_BYTES`, else `position_deletes.MIN_TOUCHED_BYTES`; 0
    reads every window of Parquet position deletes so). Both reads give the same log: the
    tests draw the bound per round, so that random data takes both.

    >>> import os; os.environ[MIN_TOUCHED_BYTES_ENV] = "0"; min_touched_bytes()
    0
    >>> del os.environ[MIN_TOUCHED_BYTES_ENV]; min_touched_bytes() == (8 << 20)
    True
    """
    return number_from_env(MIN_TOUCHED_BYTES_ENV, position_deletes.MIN_TOUCHED_BYTES, 0, "bytes")


def position_scans(
    session: Session,
    relation: str,
    index: int,
    window: tuple[int, int],
    touched: touched_files.Touched,
    table_columns: Sequence[str],
    touched_bytes: int,
) -> tuple[list[Side], str] | None:
    """The sides of `position_deletes.log_select` for the window (old, new), read through
    the touched files, and what was read (for the log line); None where the window has no
    position delete file, one of another format, the connection cannot read them, or the
    files its deletes point at (`touched_bytes`, estimated) are too small to pay for it
    (`min_touched_bytes`)."""
    executor = session.executor
    old, new = window
    deletes = position_deletes.net(touched.deletes)
    if (
        touched_bytes < min_touched_bytes()
        or not isinstance(executor, FileScanReader)
        or deletes is None
        or not (deletes.added or deletes.removed)
        or any(c.lower() in (touched_files.FILE, position_deletes.POSITION) for c in table_columns)
    ):
        return None
    target = session.target
    added, removed = set(touched.added), set(touched.removed)
    staging: list[float] = []  # seconds of each read staged (the statements time themselves)

    def pointed(path: str, other: set[str]) -> bool:
        return path not in other and any(low <= path <= high for low, high in touched.ranges)

    def scan(snapshot: int, keep: Callable[[str], bool], part: str, positions: bool) -> str | None:
        view = target.file_read(index, part)
        session.scratch.append(view)
        start = time.monotonic()
        found = executor.file_scan_view(relation, snapshot, keep, view, positions)
        staging.append(time.monotonic() - start)
        if found is None:
            return None
        read.append(f"{part} {found[0]} of {found[1]}")
        return view

    def positions_of(paths: Sequence[str], part: str) -> str | None:
        view = target.positions(index, part)
        session.scratch.append(view)
        start = time.monotonic()
        made = executor.delete_positions_view(paths, view)
        staging.append(time.monotonic() - start)
        return view if made else None

    sides: list[Side] = []
    read: list[str] = []  # files read of those planned, by part
    for snapshot, files, weight, part in ((new, added, 1, "added"), (old, removed, -1, "removed")):
        if files:
            view = scan(snapshot, partial(set.__contains__, files), part, False)
            if view is None:
                return None
            sides.append(Side(view, weight))
    gone = None
    if deletes.added:
        gone = positions_of(deletes.added, "added")
        view = scan(old, partial(pointed, other=removed), "old", True)
        if gone is None or view is None:
            return None
        sides.append(Side(view, -1, gone))
    if deletes.removed:
        back = positions_of(deletes.removed, "removed")
        if back is None:
            return None
        if gone is not None:
            # rows at P(R) - P(A) only: a position still deleted at new is no row there
            kept = target.positions(index, "back")
            session.scratch.append(kept)
            session.run("position deletes", position_deletes.returned_sql(back, gone, kept))
            back = kept
        if session.fetch("position deletes", f"SELECT 1 FROM {sql(table(back))} LIMIT 1"):
            view = scan(new, partial(pointed, other=added), "new", True)
            if view is None:
                return None
            sides.append(Side(view, 1, back))
    session.timings.append(("stage files", sum(staging)))
    if not sides:
        return None  # nothing to read here: the version diff says so its own way
    counts = f"{len(deletes.added)} delete files added, {len(deletes.removed)} removed"
    return sides, f"{counts}; read files {', '.join(read)}"


def file_scans(
    session: Session,
    relation: str,
    index: int,
    old: int,
    new: int,
    touched: touched_files.Touched,
) -> tuple[str, str, str] | None:
    """The two sides of a touched-files version diff read through their files only
    (`capture/merge_on_read.py`): (new side's view, old side's view, what was read), or
    None where the connection cannot (then SQL scans both versions whole)."""
    executor = session.executor
    if not isinstance(executor, FileScanReader):
        return None
    start = time.monotonic()
    read: list[tuple[int, int]] = []
    views = (session.target.file_scan(index, new=True), session.target.file_scan(index, new=False))
    for view, snapshot, is_new in ((views[0], new, True), (views[1], old, False)):
        session.scratch.append(view)
        found = executor.file_scan_view(
            relation, snapshot, partial(touched.keeps, new=is_new), view
        )
        if found is None:
            return None
        read.append(found)
    session.timings.append(("stage files", time.monotonic() - start))
    (new_kept, new_planned), (old_kept, old_planned) = read
    return (
        *views,
        f"read {new_kept} of {new_planned} files new, {old_kept} of {old_planned} old",
    )
