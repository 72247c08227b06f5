"""touched files: which data files a version diff must pair, from the window's manifests.

A base table written merge-on-read is captured by the version diff (`version_diff.py`):
every row of the new version +1, every row of the old one -1, paired by a GROUP BY over all
read columns. Most rows sit in data files the window did not touch, and those rows are the
same in both versions:

    a data file F present at old and at new, with no delete file added or removed in the
    window that can point at F, has the same visible rows at both versions

(F's rows never change; its deletes at new are its deletes at old plus those of the window's
new delete files, minus those of removed ones). So both sides may drop F's rows before the
pairing:

    old side: rows in data files removed in the window, or in a file a window delete points at
    new side: rows in data files added in the window, or in a file a window delete points at

Which files a position delete file points at is bounded by its `file_path` column's
lower/upper bounds (Iceberg keeps them whole for delete files: its own scan planning matches
deletes to data files by them), and a deletion vector (format 3) names its one data file
(`referenced_data_file`); a data file is kept when its path falls in any bound range.
Keeping more files than needed is exact too, only slower. An equality delete file applies to
every older data file: a window with one reads both versions whole, as before.

Example: the window adds data file d9 (new rows of an UPDATE) and delete file x1 whose
`file_path` bounds are [d3, d3]: old side = rows of d3, new side = rows of d3 and d9. The
other 78 files of `lineitem` are scanned but not shuffled or paired.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.errors import Refusal
from dbt.adapters.spark_ivm.compiler.sql.templates import col, sql, table

#: Iceberg's field id of a position delete file's `file_path` column.
DELETE_FILE_PATH_ID = 2147483546
FILE = "_file"  # Iceberg's metadata column: the data file a row was read from
#: Beyond this many files or ranges the predicate is not worth its SQL: read both versions.
MAX_LISTED = 1000


@dataclass(frozen=True)
class Touched:
    """The data files each side of a version diff reads: paths listed, or within a range."""

    removed: tuple[str, ...]  # data files at old that are gone at new
    added: tuple[str, ...]  # data files at new that were not at old
    ranges: tuple[tuple[str, str], ...]  # (lower, upper) path bounds of the window's deletes
    # The window's delete files: (status 1 added / 2 removed, path, file format).
    deletes: tuple[tuple[int, str, str], ...] = ()

    @property
    def count(self) -> int:
        """Files named or bounded (a range may hold several data files)."""
        return len(set(self.removed) | set(self.added)) + len(self.ranges)

    def keeps(self, path: str, new: bool) -> bool:
        """Does the new (or old) side read data file `path`? (`side` as a test in Python;
        Python's string order is Spark's: UTF-8 keeps code point order.)

        >>> Touched(("d1",), ("d9",), (("d3", "d4"),)).keeps("d3", new=True)
        True
        """
        listed = self.added if new else self.removed
        return path in listed or any(low <= path <= high for low, high in self.ranges)

    def side(self, alias: str, new: bool) -> exp.Expression:
        """The predicate over `alias._file` for the new (or old) version's rows."""
        path = col(FILE, alias)
        listed = self.added if new else self.removed
        parts: list[exp.Expression] = []
        if listed:
            parts.append(exp.In(this=path, expressions=[exp.Literal.string(p) for p in listed]))
        for low, high in self.ranges:
            parts.append(
                exp.Between(
                    this=path.copy(), low=exp.Literal.string(low), high=exp.Literal.string(high)
                )
            )
        return exp.or_(*parts) if parts else exp.false()


def entries_sql(relation: str, snapshot_ids: Sequence[int]) -> str:
    """The data and delete files the window's snapshots added (status 1) or removed (2), with
    the paths each delete file may point at: its `file_path` bounds (a format 2 position
    delete file), else the one data file it belongs to (a format 3 deletion vector, which
    has no bounds), and its file format."""
    entries = f"{sql(table(relation))}.`all_entries`"
    ids = ", ".join(str(int(s)) for s in snapshot_ids)

    def bound(side: str) -> str:
        return (
            f"COALESCE(CAST(data_file.{side}_bounds[{DELETE_FILE_PATH_ID}] AS STRING), "
            "data_file.referenced_data_file)"
        )

    return (
        "SELECT DISTINCT status, data_file.content, data_file.file_path, "
        f"{bound('lower')}, {bound('upper')}, data_file.file_format "
        f"FROM {entries} WHERE snapshot_id IN ({ids}) AND status IN (1, 2)"
    )


def touched(rows: Sequence[tuple], columns: Collection[str]) -> Touched | Refusal:
    """The touched files from `entries_sql`'s rows, or why both versions are read whole.

    `columns`: the table's column names (a column named `_file` would hide Iceberg's)."""
    if any(c.lower() == FILE for c in columns):
        return Refusal(f"the table has a column named {FILE}")
    removed: set[str] = set()
    added: set[str] = set()
    ranges: set[tuple[str, str]] = set()
    deletes: set[tuple[int, str, str]] = set()
    for status, content, path, low, high, file_format in rows:
        if int(content) == 0:
            (added if int(status) == 1 else removed).add(str(path))
        elif int(content) == 1:
            if low is None or high is None:
                return Refusal(
                    f"position delete file {path} has no bounds on the paths it points at"
                )
            ranges.add((str(low), str(high)))
            deletes.add((int(status), str(path), str(file_format).upper()))
        else:
            return Refusal("the window has equality delete files (they apply to every older file)")
    if max(len(removed), len(added), len(ranges)) > MAX_LISTED:
        return Refusal(f"the window touched more than {MAX_LISTED} files")
    return Touched(
        tuple(sorted(removed)), tuple(sorted(added)), tuple(sorted(ranges)), tuple(sorted(deletes))
    )
