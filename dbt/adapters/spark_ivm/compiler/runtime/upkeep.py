"""upkeep: keep a model's state table small in files and snapshots.

What it maintains. The state table (`<model>__ivm_state`, Iceberg format 3, merge-on-read) is
the only table a refresh writes. Each refresh's MERGE adds a data file (new and updated rows)
and deletion vectors marking the rows it replaced (one per data file it touched) plus one
snapshot, and nothing removes them: after 30 refreshes a 5-row state is 32 data files and
their vectors, every read of the model's view merges all of them, and the snapshots keep every
replaced file on disk. After a refresh has committed, `statements` decides from one cheap
metadata query (`stats_sql`, the `snapshots` table: only table metadata, no manifest or data
file is read) what to do:

* compact (`compaction_sqls`) when the live delete files reach `DELETE_FILE_THRESHOLD` or the
  live data files exceed what the state's bytes need by `DATA_FILE_SLACK`:
  `rewrite_data_files` rewrites every data file that has a deletion vector (and bin-packs the
  small ones) into files with the deletes applied; the vectors go with the files they belong
  to. It is an Iceberg `replace` commit: the rows do not change, so a reader of the view sees
  the same result before and after. A state built in format 2 by an earlier version (position
  delete files, which outlive the data files they point at and took
  `rewrite_position_delete_files` to remove, a procedure Iceberg 1.10 fails on tables with
  array columns such as MIN/MAX lists: apache/iceberg#15080) is moved to format 3 by its
  first compaction: one `INSERT OVERWRITE` of its own rows, which drops every old file.
* expire snapshots (`expire_sql`) once there are `EXPIRE_AT` of them, keeping the newest
  `RETAIN_LAST`: this deletes the files only the expired snapshots referenced (the
  pre-compaction files among them). Where only the expiry is due and no delta log is
  trimmed with it, the session method expires through Iceberg's table API in the driver
  (`commit._expired`): the procedure is a Spark action that lists every file of every
  snapshot in Spark jobs, 0.9-1.1 s for a TPC-H state on two cores, once every ~11 runs of a
  state rebuilt in place.

Why these thresholds. A compaction rewrites the state and costs a few seconds of commits and
Spark jobs (about 1 s for `rewrite_data_files` on a small state, two cores), an expiry 2-10 s (Iceberg reads the manifests of every
snapshot): too much for every refresh, whose floor is about 3 s, but cheap every 8-16 of them.
With 8 delete files a read applies at most 8 deletion vectors; 16 data
files beyond what the bytes need (`TARGET_FILE_BYTES` each, Iceberg's default target) bound
the small files of insert-only workloads, whose MERGEs add data files but no delete files.
`RETAIN_LAST = 5` keeps the last few versions of the state readable: a query that started on
the state before this refresh (its MERGE and a compaction are at most three commits) still
finds its files, and `VERSION AS OF` a recent state snapshot keeps working. Expiring at 16
snapshots keeps at most 17 (15 and a compaction's two), and each expiry removes about 11.

A large state whose refreshes touch rows in every file is rewritten whole by each compaction
(delete-file-threshold 1): that is the price of merge-on-read, paid once every
`DELETE_FILE_THRESHOLD` delete files rather than by every read.

Metadata files. Every commit writes a new `metadata.json` and Iceberg keeps the old ones
unless told otherwise (41 after 30 refreshes of one state). Every table the plugin creates
(states, delta logs, snapshot-diff copies) carries `BOUNDED_METADATA` (`sql/layout.py`): Iceberg deletes the
oldest metadata file after a commit once `METADATA_VERSIONS` previous ones are kept. A
refresh reads only a table's current metadata file; its snapshots, not old metadata files,
serve `VERSION AS OF`.

Failures. Upkeep runs after the refresh's commit, so a failure there only warns: the run
succeeds and the next due refresh tries again. So that a failure cannot recur unseen forever,
the state's properties count the failures since its last upkeep that worked
(`FAILURES`, with the last error, `LAST_ERROR`): every warning says how many in a row,
`ivm_explain` shows them, and the first upkeep that works clears them.

Base tables are never touched: every statement here names the state table only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.capture import PROCEDURES
from dbt.adapters.spark_ivm.compiler.sql.state_table import STATE_FORMAT
from dbt.adapters.spark_ivm.compiler.sql.templates import sql, table

#: Live delete files (deletion vectors) at which the state is compacted.
DELETE_FILE_THRESHOLD = 8
#: Live data files beyond what the state's bytes need at which the state is compacted.
DATA_FILE_SLACK = 16
#: Bytes one data file holds (Iceberg's default `write.target-file-size-bytes`).
TARGET_FILE_BYTES = 512 * 1024 * 1024
#: Snapshots kept by an expiry: the current one and the four before it.
RETAIN_LAST = 5
#: Snapshots at which old ones are expired.
EXPIRE_AT = 16

#: State table properties: upkeep failures since the last upkeep that worked, the last error.
FAILURES = "ivm.upkeep_failures"
LAST_ERROR = "ivm.upkeep_error"

_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d{1,9})?$")


@dataclass(frozen=True)
class StateStats:
    """The state table's size, from its current snapshot's summary (None: not recorded)."""

    snapshots: int
    data_files: int | None
    delete_files: int | None
    total_bytes: int | None
    #: The current snapshot's commit time as Spark prints it (session time zone).
    committed_at: str | None


def stats_sql(state: str) -> str:
    """One row: the number of snapshots and the current snapshot's file totals.

    Reads the `snapshots` metadata table, i.e. the table's metadata file only. The state
    table's history is linear (MERGEs and replace commits), so the newest snapshot is the
    current one.
    """
    snapshots = f"{sql(table(state))}.`snapshots`"

    def latest(key: str) -> str:
        return f"CAST(max_by(summary['{key}'], committed_at) AS BIGINT)"

    return (
        f"SELECT COUNT(*), {latest('total-data-files')}, {latest('total-delete-files')}, "
        f"{latest('total-files-size')}, CAST(max(committed_at) AS STRING) FROM {snapshots}"
    )


def parse_stats(row: Sequence) -> StateStats:
    def number(value: object) -> int | None:
        return None if value is None else int(value)  # type: ignore[call-overload]

    return StateStats(
        snapshots=int(row[0] or 0),
        data_files=number(row[1]),
        delete_files=number(row[2]),
        total_bytes=number(row[3]),
        committed_at=None if row[4] is None else str(row[4]),
    )


def from_summary(snapshots: int, summary: Mapping[str, str]) -> StateStats:
    """The stats of a table with `snapshots` snapshots whose current snapshot has `summary`
    (read without Spark, `session_metadata.snapshot_totals`); its commit time unknown."""

    def number(key: str) -> int | None:
        value = summary.get(key)
        return int(value) if value is not None and value.isdigit() else None

    return StateStats(
        snapshots=snapshots,
        data_files=number("total-data-files"),
        delete_files=number("total-delete-files"),
        total_bytes=number("total-files-size"),
        committed_at=None,
    )


def may_be_due(stats: StateStats) -> bool:
    """Could a compaction or an expiry be due? False only when neither can be, whatever the
    commit time (which `stats_sql` then need not read)."""
    return needs_compaction(stats) or stats.snapshots >= EXPIRE_AT


def needs_compaction(stats: StateStats) -> bool:
    """Too many delete files, or many more data files than the state's bytes need.

    A table whose snapshots do not record the totals is compacted when it is due for expiry.
    """
    if stats.data_files is None or stats.delete_files is None:
        return needs_expiry(stats)
    if stats.delete_files >= DELETE_FILE_THRESHOLD:
        return True
    needed = max(1, math.ceil((stats.total_bytes or 0) / TARGET_FILE_BYTES))
    return stats.data_files >= needed + DATA_FILE_SLACK


def needs_expiry(stats: StateStats) -> bool:
    return stats.snapshots >= EXPIRE_AT and stats.committed_at is not None


def compaction_sqls(state: str, format_version: str = STATE_FORMAT) -> list[str]:
    """Rewrite the data files that have deletes (and bin-pack small ones): in format 3 their
    deletion vectors go with them. A format 2 state is moved to format 3 by rewriting it
    whole (its position delete files outlive the data files they point at, and removing them
    takes `rewrite_position_delete_files`, which fails on array columns). Rows unchanged.

    >>> for s in compaction_sqls("db.m__ivm_state"):
    ...     print(s)
    CALL system.rewrite_data_files(table => 'db.m__ivm_state', options => map('delete-file-threshold', '1'))
    >>> for s in compaction_sqls("db.m__ivm_state", "2"):
    ...     print(s)
    ALTER TABLE `db`.`m__ivm_state` SET TBLPROPERTIES ('format-version' = '3')
    INSERT OVERWRITE `db`.`m__ivm_state` SELECT * FROM `db`.`m__ivm_state`
    """
    if format_version == "2":
        name = sql(table(state))
        return [
            f"ALTER TABLE {name} SET TBLPROPERTIES ('format-version' = '3')",
            f"INSERT OVERWRITE {name} SELECT * FROM {name}",
        ]
    name = sql(exp.Literal.string(state))
    options = "map('delete-file-threshold', '1')"
    return [f"CALL {PROCEDURES}.rewrite_data_files(table => {name}, options => {options})"]


def expire_sql(state: str, older_than: str, retain_last: int | None = None) -> str:
    """Expire every snapshot older than `older_than` (a timestamp as Spark prints it) except
    the newest `retain_last` (default RETAIN_LAST), deleting the files no kept snapshot
    references."""
    if not _TIMESTAMP.match(older_than):
        raise ValueError(f"not a timestamp: {older_than!r}")
    keep = RETAIN_LAST if retain_last is None else retain_last
    return (
        f"CALL {PROCEDURES}.expire_snapshots(table => {sql(exp.Literal.string(state))}, "
        f"older_than => TIMESTAMP {sql(exp.Literal.string(older_than))}, "
        f"retain_last => {keep})"
    )


def statements(
    state: str, stats: StateStats, format_version: str = STATE_FORMAT
) -> list[tuple[str, str]]:
    """(timing label, statement) to run after a refresh's commit; empty when nothing is due.

    The expiry comes last and is older than the stats' snapshot (the refresh's commit), so the
    compaction's own commits are always among the snapshots it keeps.
    """
    out: list[tuple[str, str]] = []
    if needs_compaction(stats):
        out.extend(("compact", s) for s in compaction_sqls(state, format_version))
    if needs_expiry(stats):
        assert stats.committed_at is not None
        out.append(("expire", expire_sql(state, stats.committed_at)))
    return out


@dataclass(frozen=True)
class Failures:
    """Upkeep failures of a state since its last upkeep that worked, as its properties
    record them (`FAILURES`, `LAST_ERROR`).

    >>> Failures.of({FAILURES: "3", LAST_ERROR: "boom"})
    Failures(count=3, last_error='boom')
    >>> Failures.of({}).count, Failures.of({FAILURES: "x"}).count
    (0, 0)
    >>> print(Failures(2, "boom").one_more("db.m", "it broke 'again'"))
    ALTER TABLE `db`.`m` SET TBLPROPERTIES ('ivm.upkeep_failures' = '3', 'ivm.upkeep_error' = 'it broke \\'again\\'')
    >>> print(Failures(2, "boom").cleared("db.m"))
    ALTER TABLE `db`.`m` UNSET TBLPROPERTIES IF EXISTS ('ivm.upkeep_failures', 'ivm.upkeep_error')
    """

    count: int
    last_error: str | None

    @classmethod
    def of(cls, properties: Mapping[str, str]) -> Failures:
        found = properties.get(FAILURES, "0")
        return cls(int(found) if found.isdigit() else 0, properties.get(LAST_ERROR))

    def one_more(self, state: str, error: str) -> str:
        """Record one more failure, with its error (shortened to 300 characters)."""
        count = sql(exp.Literal.string(str(self.count + 1)))
        said = sql(exp.Literal.string(error[:300]))
        return (
            f"ALTER TABLE {sql(table(state))} SET TBLPROPERTIES "
            f"('{FAILURES}' = {count}, '{LAST_ERROR}' = {said})"
        )

    @staticmethod
    def cleared(state: str) -> str:
        """Forget the failures: an upkeep worked."""
        return (
            f"ALTER TABLE {sql(table(state))} UNSET TBLPROPERTIES IF EXISTS "
            f"('{FAILURES}', '{LAST_ERROR}')"
        )
