"""merge-on-read files: the change of a base table with delete files, read from the files the
window touched and nothing else.

A table whose producers write delete files (merge-on-read UPDATE, DELETE, MERGE) cannot be
read by Iceberg's changelog scan. Its change is the version diff (`version_diff.py`) of the
data files the window touched (`touched_files.py`), the other files' rows being the same at
both versions:

    log = weighted( +rows_new(added ∪ pointed) , -rows_old(removed ∪ pointed) )

where rows_v(F) are the rows visible at version v in data files F, i.e. with the delete files
that apply at v applied, and `pointed` are the data files a delete file the window added or
removed may point at. In SQL both versions are scanned whole and filtered by `_file` (Iceberg
does not push that predicate into its scan). Where the connection can
(`FileScanReader`, the session method, `staged_reads.py`), each side is instead a scan
planned at its snapshot and cut down to those files, with their delete files attached, so a
refresh reads the touched files and not the table.

Example: an UPDATE of one row of data file d3 adds d9 (the new row) and delete file x1
pointing at d3. new side = d9's row and d3's rows but the updated one (x1 applied); old side
= d3's rows. The log: the new row +1, the old one -1; the other rows of d3 cancel.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.capture.version_diff import weighted_rows
from dbt.adapters.spark_ivm.compiler.capture.weights import weighted_log
from dbt.adapters.spark_ivm.compiler.sql.templates import col, table


def log_select(
    new_view: str, old_view: str, columns: Sequence[str], exact: Collection[str] = ()
) -> exp.Select:
    """The compacted log of two file-restricted reads: `new_view` (+1), `old_view` (-1)."""
    new = weighted_rows(table(new_view), columns, 1)
    old = weighted_rows(table(old_view), columns, -1)
    return weighted_log(exp.union(new, old, distinct=False), columns, col("__ivm_cw"), exact)
