"""position deletes: the change of a merge-on-read base read from the rows its window's
position delete files name, not from a diff of the files they point at.

The rows of a data file never change; which of them are visible does, with the position
delete files (`file_path`, `pos`) that apply to it. For a data file F present at both versions,
let A be the window's delete files live at new and not at old (added), R those live at old and
not at new (removed; Iceberg replaces a data file's earlier delete file by one holding its
positions too), and P(X) their positions. The positions deleted at new are P(L_old - R) ∪ P(A),
so a row of F at position p

    leaves the view  iff  it was visible at old and p ∈ P(A)
    comes back       iff  it is visible at new  and p ∈ P(R) - P(A)

(a row visible at new is in no file of A: dropping P(A) from P(R) only skips rows that are not
there). With the data files the window added (all their rows new) and removed (all gone):

    log = + rows_new(added data files)
          - rows_old(removed data files)
          - rows_old(touched data files present at both) at positions P(A)
          + rows_new(touched data files present at both) at positions P(R) - P(A)

Each side scans its files once and keeps the rows whose (`_file`, `_pos`) a broadcast join
with the few positions finds: no shuffle of the touched files' rows, which the version diff
(`merge_on_read.py`) pairs by all columns at both versions. The last side is read only where
P(R) - P(A) has a position, which a window of deletes alone never has.

Example: a DELETE of the row at position 4 of data file d3 writes x1 = {(d3, 4)}: A = {x1},
log = - row 4 of d3 at old. A later DELETE of position 7 replaces x1 by x2 = {(d3, 4),
(d3, 7)}: A = {x2}, R = {x1}, P(R) - P(A) empty; at old row 4 is not visible, so the log is
- row 7 of d3.

Only Parquet position delete files are read so (a deletion vector is a Puffin blob); a window
with any other delete file, or whose deletes point at less than `MIN_TOUCHED_BYTES` of data
files (`runtime/file_reads.min_touched_bytes`), is read by the version diff.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.capture import Snapshot
from dbt.adapters.spark_ivm.compiler.capture.touched_files import FILE
from dbt.adapters.spark_ivm.compiler.capture.version_diff import weighted_rows
from dbt.adapters.spark_ivm.compiler.capture.weights import weighted_log
from dbt.adapters.spark_ivm.compiler.sql.templates import col, sql, table

POSITION = "_pos"  # Iceberg's metadata column: a row's position in its data file
#: A position delete file's columns: the data file's path and the row's position in it.
DELETED_FILE, DELETED_POS = "file_path", "pos"
#: Below this many bytes of data files a window's deletes point at, the version diff reads
#: the change sooner: reading the positions costs a few more statements (about 0.3 s a
#: table, measured on the star models' merge-on-read bases, files of 0.3-1.3 MB, 2026-12-06),
#: while the version diff of a few small files is quick; over TPC-H SF 1's line items (two
#: 72 MB files) the positions took 2.6 s where the diff took 18 s.
MIN_TOUCHED_BYTES = 8 << 20


def touched_bytes(snapshot: Snapshot | None, files: int) -> int:
    """The bytes of `files` data files of a table whose files are of its average size at
    `snapshot` (its summary's total bytes over data files; 0 when not known).

    >>> touched_bytes(Snapshot(2, 1, 1, "delete", total_bytes=100 << 20, data_files=4), 2)
    52428800
    >>> touched_bytes(None, 3)
    0
    """
    if snapshot is None or snapshot.data_files <= 0:
        return 0
    return snapshot.total_bytes * files // snapshot.data_files


@dataclass(frozen=True)
class DeleteFiles:
    """The window's position delete files, net: added (live at new, not at old) and removed
    (live at old, not at new)."""

    added: tuple[str, ...]
    removed: tuple[str, ...]


def net(deletes: Iterable[tuple[int, str, str]]) -> DeleteFiles | None:
    """The net delete files of a window from its entries (status 1 added / 2 removed, path,
    file format); None where one is not a Parquet position delete file.

    >>> net([(1, "x1", "PARQUET"), (1, "x2", "PARQUET"), (2, "x1", "PARQUET"),
    ...      (2, "x0", "PARQUET")])
    DeleteFiles(added=('x2',), removed=('x0',))
    >>> net([(1, "dv-1.puffin", "PUFFIN")]) is None
    True
    """
    added: set[str] = set()
    removed: set[str] = set()
    for status, path, file_format in deletes:
        if file_format.upper() != "PARQUET":
            return None
        (added if status == 1 else removed).add(path)
    return DeleteFiles(tuple(sorted(added - removed)), tuple(sorted(removed - added)))


@dataclass(frozen=True)
class Side:
    """One side of the log: the rows of `view` (a file read exposing `_file` and `_pos`)
    weighted `weight`, only those at a position of `positions` (None: all)."""

    view: str
    weight: int
    positions: str | None = None


def side_select(side: Side, columns: Sequence[str]) -> exp.Select:
    """The weighted rows of one side.

    >>> print(side_select(Side("v_old", -1, "p_added"), ["k"]).sql("spark").replace("`", ""))
    SELECT __ivm_v.k, -1 AS __ivm_cw FROM v_old AS __ivm_v JOIN p_added AS __ivm_p ON __ivm_v._file = __ivm_p.file_path AND __ivm_v._pos = __ivm_p.pos
    """
    rows = weighted_rows(table(side.view), columns, side.weight)
    if side.positions is None:
        return rows
    on = exp.and_(
        exp.EQ(this=col(FILE, "__ivm_v"), expression=col(DELETED_FILE, "__ivm_p")),
        exp.EQ(this=col(POSITION, "__ivm_v"), expression=col(DELETED_POS, "__ivm_p")),
    )
    return rows.join(exp.alias_(table(side.positions), "__ivm_p"), on=on)


def log_select(
    sides: Sequence[Side], columns: Sequence[str], exact: Collection[str] = ()
) -> exp.Select:
    """The compacted log of `sides` (`weights.weighted_log`): a row deleted and inserted back
    in the window cancels."""
    parts = [side_select(s, columns) for s in sides]
    union: exp.Expression = parts[0]
    for part in parts[1:]:
        union = exp.union(union, part, distinct=False)
    return weighted_log(union, columns, col("__ivm_cw"), exact)


def returned_sql(removed: str, added: str, view: str) -> str:
    """Name `view` the positions of `removed` that `added` does not hold, P(R) - P(A).

    >>> print(returned_sql("p_r", "p_a", "p_back").replace("`", ""))
    CREATE OR REPLACE TEMPORARY VIEW p_back AS SELECT r.file_path, r.pos FROM p_r AS r \
LEFT ANTI JOIN p_a AS a ON r.file_path = a.file_path AND r.pos = a.pos
    """
    on = exp.and_(
        exp.EQ(this=col(DELETED_FILE, "r"), expression=col(DELETED_FILE, "a")),
        exp.EQ(this=col(DELETED_POS, "r"), expression=col(DELETED_POS, "a")),
    )
    select = (
        exp.Select()
        .select(col(DELETED_FILE, "r"), col(DELETED_POS, "r"))
        .from_(exp.alias_(table(removed), "r"))
        .join(exp.alias_(table(added), "a"), on=on, join_type="left anti")
    )
    return f"CREATE OR REPLACE TEMPORARY VIEW {sql(table(view))} AS {sql(select)}"
