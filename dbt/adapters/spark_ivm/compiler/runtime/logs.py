"""logs: a refresh's first step, one compacted change log per changed base relation.

Each base relation whose snapshot moved since the state's watermark gets a log: weighted
rows (+n inserted, -n deleted) of the columns the model reads, computed once into a cached
session view (`render.create_scratch_sql`). Which change source reads it is chosen per
relation (`capture.choose_method`): Iceberg's changelog scan, a version diff, or the keys an
upstream state handed over in this run (`Handoff`, `chain.py`). The join keys each log
touches are then collected for key pruning (`pruning.py`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from dbt.adapters.spark_ivm.compiler import capture
from dbt.adapters.spark_ivm.compiler.capture import (
    changelog,
    delta_log,
    merge_on_read,
    position_deletes,
    selection,
    touched_files,
    version_diff,
    weights,
)
from dbt.adapters.spark_ivm.compiler.errors import Refusal
from dbt.adapters.spark_ivm.compiler.ir import KeyRange, Query
from dbt.adapters.spark_ivm.compiler.optimize import pruning
from dbt.adapters.spark_ivm.compiler.runtime import base_tables, file_reads
from dbt.adapters.spark_ivm.compiler.runtime.executor import ChangelogReader, MetadataReader
from dbt.adapters.spark_ivm.compiler.runtime.outcome import Rebuild
from dbt.adapters.spark_ivm.compiler.runtime.session import Session

# Key values are collected into the driver (for pruning) only from logs up to this size.
MAX_COLLECTED_LOG_ROWS = 100_000


@dataclass(frozen=True)
class Handoff:
    """What an upstream state's refresh changed in this run (`chain.py`): one commit to its
    state table, changing only rows whose keys are in `keys` (None: no data row)."""

    keys: tuple[str, list[str]] | None

    def covers(self, snapshots: Mapping[int, capture.Snapshot], old: int | None, new: int) -> bool:
        """Is that commit the state table's only change from `old` to `new`? Compactions
        (`replace`) change no row; any other commit is an earlier run's change that this
        consumer missed (a failure between two commits), and then the whole difference
        must be read."""
        chain = capture.lineage(snapshots, old, new)
        return chain is not None and sum(s.operation != "replace" for s in chain) == 1


@dataclass
class Captured:
    """A refresh's change logs: the scratch relation of each base relation with delta rows,
    each changed relation's delta rows, and how each change was read (for the log line)."""

    logs: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    methods: dict[str, str] = field(default_factory=dict)


def write_logs(
    session: Session,
    query: Query,
    watermarks: dict[str, int | None],
    pinned: dict[str, int | None],
    metadata: dict[str, base_tables.TableMetadata],
    handoff: Mapping[str, Handoff],
) -> Captured:
    """Write one compacted log per changed base relation; `Rebuild` when a base table's
    change since the watermark cannot be read (`capture.choose_method`). `handoff`: the
    changes upstream states of this model handed over in this run, by state table."""
    found = Captured()
    logs, counts = found.logs, found.counts
    read = query.columns_read()
    filters = selection.pushed_filters(query)
    for index, relation in enumerate(query.relations):
        old, new = watermarks.get(relation), pinned[relation]
        counts[relation] = 0
        if old == new:
            continue
        if any(metadata[relation].stale(snap, read[relation]) for snap in (old, new)):
            raise Rebuild(
                f"base table {relation} changed, and its snapshots carry an older schema "
                "than the table (a column the model reads was renamed after a commit)"
            )
        method = capture.choose_method(metadata[relation].snapshots, old, new)
        if isinstance(method, Refusal):
            raise Rebuild(f"the change of base table {relation} cannot be read: {method}")
        if method is capture.CaptureMethod.NONE or new is None:
            continue
        columns = read[relation]
        # doubles grouped by their text in the log (`capture/weights.py`)
        exact = weights.exact_columns(query.columns_of(relation))
        log_table = session.target.log(index)
        handed = handoff.get(relation)
        if handed is not None and not handed.covers(metadata[relation].snapshots, old, new):
            handed = None
        if handed is not None and handed.keys is None:
            found.methods[relation] = "handed over: no row changed"
            continue
        logged = None
        if handed is None and delta_log.is_model_state(relation):
            logged = _logged_commits(session, relation, metadata[relation].snapshots, old, new)
        if handed is not None and handed.keys is not None:
            found.methods[relation] = "handed over, keyed version diff"
            select = version_diff.log_select(relation, old, new, columns, handed.keys, exact)
        elif isinstance(logged, list):
            many = "refresh" if len(logged) == 1 else "refreshes"
            found.methods[relation] = f"delta log of {len(logged)} {many}"
            select = delta_log.log_select(relation, logged, columns, exact)
        elif method is capture.CaptureMethod.CHANGELOG:
            view = session.target.changelog_view(index)
            session.scratch.append(view)
            found.methods[relation] = _changelog_view(session, relation, old, new, view)
            select = changelog.log_select(view, columns, exact)
        else:
            snapshots = metadata[relation].snapshots
            touched = _touched(session, relation, query, snapshots, old, new)
            table_columns = [name for name, _ in query.columns_of(relation)]
            positions = (
                None
                if touched is None or old is None
                else file_reads.position_scans(
                    session,
                    relation,
                    index,
                    (old, new),
                    touched,
                    table_columns,
                    position_deletes.touched_bytes(snapshots.get(new), len(touched.ranges)),
                )
            )
            views = (
                None
                if touched is None or old is None or positions is not None
                else file_reads.file_scans(session, relation, index, old, new, touched)
            )
            found.methods[relation] = (
                ("position deletes" if positions else "version diff")
                + (f" of {touched.count} touched files" if touched else "")
                + (f", {positions[1]}" if positions else "")
                + (f", {views[2]}" if views else "")
                + (f" ({logged})" if logged else "")
            )
            if positions is not None:
                select = position_deletes.log_select(positions[0], columns, exact)
            elif views is not None:
                select = merge_on_read.log_select(views[0], views[1], columns, exact)
            else:
                select = version_diff.log_select(
                    relation, old, new, columns, exact=exact, touched=touched
                )
        if relation in filters:
            select = selection.filtered_log(select, filters[relation])
        n = session.compute_counted(f"log {relation}", log_table, select)
        counts[relation] = n
        if n:
            logs[relation] = log_table
    return found


def _touched(
    session: Session,
    relation: str,
    query: Query,
    snapshots: Mapping[int, capture.Snapshot],
    old: int | None,
    new: int,
) -> touched_files.Touched | None:
    """The data files a version diff old -> new must pair (`touched_files.py`); None:
    all (no old version, not a descendant of it, or the manifests do not bound them)."""
    chain = capture.lineage(snapshots, old, new)
    if old is None or not chain:
        return None
    ids = [s.snapshot_id for s in chain]
    rows = None
    if isinstance(session.executor, MetadataReader):
        reader = session.executor
        rows = session.timed(
            "touched files",
            lambda: reader.iceberg_window_files(relation, ids, touched_files.DELETE_FILE_PATH_ID),
        )
    if rows is None:
        try:
            rows = session.fetch("touched files", touched_files.entries_sql(relation, ids))
        except Exception:  # noqa: BLE001 - no readable manifests: pair both versions whole
            return None
    found = touched_files.touched(rows, [name for name, _ in query.columns_of(relation)])
    return None if isinstance(found, Refusal) else found


def _logged_commits(
    session: Session,
    state: str,
    snapshots: Mapping[int, capture.Snapshot],
    old: int | None,
    new: int,
) -> list[int] | Refusal:
    """The commits to an upstream ivm model's state from `old` to `new` when its delta log
    holds every one of them (`capture/delta_log.py`), else why not (then: version diff)."""
    chain = capture.lineage(snapshots, old, new)
    if chain is None:
        return Refusal("its state is not a descendant of the version this model read")
    commits = [s.snapshot_id for s in chain if s.operation != "replace"]
    try:
        rows = session.fetch("delta log", delta_log.covered_sql(state, commits))
    except Exception:  # noqa: BLE001 - the upstream keeps no delta log
        return Refusal(f"{delta_log.log_of(state)} cannot be read")
    found = {int(r[0]) for r in rows}
    missing = len([c for c in commits if c not in found])
    if missing:
        return Refusal(f"{delta_log.log_of(state)} lacks {missing} of {len(commits)} refreshes")
    return commits


def _changelog_view(session: Session, relation: str, old: int | None, new: int, view: str) -> str:
    """The changelog scan old -> new as the temp view `view`: raw where the connection
    can read it so, else through Iceberg's procedure (carry-overs removed). Returns
    which, for the log line."""
    start = time.monotonic()
    executor = session.executor
    if isinstance(executor, ChangelogReader) and executor.changelog_view(
        relation, changelog.scan_options(old, new), view
    ):
        session.timings.append(("changelog", time.monotonic() - start))
        return "changelog scan"
    session.run("changelog", changelog.procedure_sql(relation, old, new, view))
    return "changelog procedure"


def key_ranges(
    session: Session, query: Query, logs: dict[str, str], counts: dict[str, int]
) -> dict[tuple[int, str], KeyRange]:
    """The join keys each changed input's log touches, for `pruning.prune_terms`: one
    pass per log; values are listed only for logs small enough to collect."""
    wanted: dict[str, list[str]] = {}
    for link in pruning.key_links(query):
        relation = query.inputs[link.delta].relation
        if relation in logs and link.delta_column not in wanted.setdefault(relation, []):
            wanted[relation].append(link.delta_column)
    by_relation: dict[str, dict[str, KeyRange]] = {}
    for relation, columns in wanted.items():
        if not columns:
            continue
        with_values = counts.get(relation, 0) <= MAX_COLLECTED_LOG_ROWS
        dtypes = dict(query.columns_of(relation))
        stats = pruning.key_stats_sql(logs[relation], columns, with_values, dtypes)
        row = session.fetch("key ranges", stats)[0]
        by_relation[relation] = pruning.parse_key_stats(row, columns, with_values, dtypes)
    return {
        (i, column): key_range
        for i, inp in enumerate(query.inputs)
        for column, key_range in by_relation.get(inp.relation, {}).items()
    }
