"""session: one state's build or refresh speaking to the model's connection.

A `Session` is what every step of a run shares: the executor, the model's names (`Target`),
where messages go, the timings of every statement, the scratch relations the run created,
and what it read once and keeps (table properties, Iceberg metadata files, the state's
column types). The steps themselves are functions over it (`facts.py`, `logs.py`,
`commit.py`); `refresh.Maintainer` walks them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler import render
from dbt.adapters.spark_ivm.compiler.errors import BaseRelationError
from dbt.adapters.spark_ivm.compiler.relations import Target
from dbt.adapters.spark_ivm.compiler.runtime import base_tables, failpoints, merge_scope
from dbt.adapters.spark_ivm.compiler.runtime.executor import (
    Executor,
    MetadataReader,
    ScratchWriter,
    SoleWriter,
    StatementCounter,
    describe_columns,
    relation_properties,
)
from dbt.adapters.spark_ivm.compiler.runtime.outcome import Rebuild
from dbt.adapters.spark_ivm.compiler.sql import state_table
from dbt.adapters.spark_ivm.compiler.sql.layout import NO_LAYOUT, Layout
from dbt.adapters.spark_ivm.compiler.sql.templates import sql, table

T = TypeVar("T")


@dataclass(frozen=True)
class Head:
    """A base table's current Iceberg metadata file and snapshot (None: no snapshot yet)."""

    metadata: str
    snapshot: int | None
    # When the metadata file was written (epoch ms): for a state, its last commit of a run
    # (`cost.py` times the run by it).
    updated_ms: int | None = None


@dataclass
class HeadsRead:
    """The heads a model's run read, shared by its states' sessions: they stand until the
    executor runs its next statement (`executor.StatementCounter`; any statement may write),
    so the no-change check, each state's run and the pins read a table's head once where
    nothing was written between (a staged query read its heads 4-6 times: 0.2 s at SF 1).
    A head read earlier in the run is one the run could as well have started at; a commit
    of another writer since is read by the next run."""

    statements: int = -1
    heads: dict[str, Head] = field(default_factory=dict)
    #: The same for snapshot totals (`Session.snapshot_totals`): the count of a state just
    #: written and its upkeep read the same summary.
    totals: dict[str, tuple[int, dict[str, str]]] = field(default_factory=dict)
    #: And view properties by view (None: no such view), read by the model's runner
    #: (`chain.py`) before the walk and again in it.
    views: dict[str, dict[str, str] | None] = field(default_factory=dict)

    def still(self, statements: int) -> dict[str, Head]:
        """The heads read, emptied (with the totals and views) where a statement ran since
        they were.

        >>> read = HeadsRead()
        >>> _ = read.still(3); read.views["db.v"] = {"ivm.stages": "2"}
        >>> read.still(3) is read.heads, read.views  # no statement since: all stands
        (True, {'db.v': {'ivm.stages': '2'}})
        >>> _ = read.still(4); read.views  # one ran: read again
        {}
        """
        if statements != self.statements:
            self.heads.clear()
            self.totals.clear()
            self.views.clear()
            self.statements = statements
        return self.heads


@dataclass(kw_only=True)
class Session:
    """One state's run over `executor`: every statement timed, scratch relations tracked."""

    executor: Executor
    model: str
    target: Target
    log: Callable[[str], None] = print
    # What the user should act on (dbt's warning events: `--warn-error` fails on them).
    warn: Callable[[str], None] = print
    timings: list[tuple[str, float]] = field(default_factory=list)
    # How the tables of this state are created: the model's table configs (`sql/layout.py`).
    layout: Layout = NO_LAYOUT
    # Table properties already read this run, by relation (shared by a model's states).
    known_properties: dict[str, dict[str, str]] = field(default_factory=dict)
    # Parsed Iceberg metadata files by location (a file never changes once written).
    metadata_read: dict[str, base_tables.TableMetadata] = field(default_factory=dict)
    heads_read: HeadsRead = field(default_factory=HeadsRead)  # shared by a model's states
    scratch: list[str] = field(default_factory=list)  # session views this run created
    columns: dict[str, str] | None = None  # the state table's column types, once read
    sole: bool | None = None  # no other process can commit to the state (`guards_commits`)
    # Why the refresh rebuilds instead of recomputing (groups, reads) -> reason or None: set
    # once the run chose to refresh (`recompute_cost.weigh`); None: it always recomputes.
    recompute_instead: Callable[[int, int], str | None] | None = None

    # -- statements -----------------------------------------------------------------------
    def timed(self, label: str, call: Callable[[], T]) -> T:
        """`call()`, its time recorded under `label` (when it returns)."""
        start = time.monotonic()
        result = call()
        self.timings.append((label, time.monotonic() - start))
        return result

    def run(self, label: str, statement: str) -> None:
        self.timed(label, lambda: self.executor.execute(statement))

    def fetch(self, label: str, statement: str) -> list[tuple]:
        return self.timed(label, lambda: self.executor.fetch(statement))

    def checkpoint(self, step: str) -> None:
        """A point where a test may make the run fail (`failpoints.py`)."""
        failpoints.checkpoint(self.model, step)

    # -- scratch relations ----------------------------------------------------------------
    def may_recompute(self, groups: int, reads: int) -> None:
        """`Rebuild` (in place) where the run rebuilds rather than recompute `groups` groups
        in `reads` reads of the inputs."""
        why = self.recompute_instead(groups, reads) if self.recompute_instead else None
        if why is not None:
            raise Rebuild(why, in_place=True, by_cost=True)

    def compute_scratch(
        self, label: str, name: str, select: exp.Expression, eager: bool = True
    ) -> None:
        """Compute a scratch relation (see `render.create_scratch_sql`); not `eager`: the
        first statement that reads it computes its rows."""
        self.scratch.append(name)
        if isinstance(self.executor, ScratchWriter):
            start = time.monotonic()
            if self.executor.scratch_view(sql(select), name, eager):
                self.timings.append((label, time.monotonic() - start))
                return
        for statement in render.create_scratch_sql(name, select, eager):
            self.run(label, statement)

    def compute_measured(
        self, label: str, name: str, select: exp.Expression, measures: Sequence[str]
    ) -> tuple:
        """Compute a scratch relation and the aggregates `measures` over its rows (the
        delta's stats) in one pass: in session mode Spark gathers them as it computes the
        rows; else the query that reads them computes and keeps the rows as it reads them."""
        if isinstance(self.executor, ScratchWriter):
            writer = self.executor
            self.scratch.append(name)  # dropped at the end, also when the pass fails
            found = self.timed(
                label, lambda: writer.measured_scratch_view(sql(select), name, measures)
            )
            if found is not None:
                return found
            self.scratch.remove(name)
        self.compute_scratch(label, name, select, eager=False)
        return self.fetch(label, f"SELECT {', '.join(measures)} FROM {sql(table(name))}")[0]

    def compute_counted(self, label: str, name: str, select: exp.Expression) -> int:
        """Compute a scratch relation; its number of rows (counted as it is computed)."""
        self.compute_scratch(label, name, select, eager=False)
        if isinstance(self.executor, ScratchWriter):
            writer = self.executor
            counted = self.timed(label, lambda: writer.count_scratch(name))
            if counted is not None:
                return counted
        return int(self.fetch(label, f"SELECT COUNT(*) FROM {sql(table(name))}")[0][0])

    def drop_scratch(self) -> None:
        """Release the run's scratch relations (also after a failure: they hold memory)."""
        while self.scratch:
            view = self.scratch.pop()
            try:
                if isinstance(self.executor, ScratchWriter):
                    drop = partial(self.executor.drop_scratch_view, view)
                    if self.timed("drop scratch", drop):
                        continue
                self.run("drop scratch", render.drop_scratch_sql(view))
            except Exception as e:  # noqa: BLE001 - cleanup must not mask the refresh's outcome
                self.warn(f"ivm model '{self.model}': could not drop {view}: {str(e)[:200]}")

    # -- what the run reads once ----------------------------------------------------------
    def properties(self, relation: str) -> dict[str, str]:
        known = self.known_properties.get(relation)
        if known is not None:
            return known
        return self.timed("properties", lambda: relation_properties(self.executor, relation))

    def guards_commits(self) -> bool:
        """Must a refresh's commit hold only over the metadata row it read
        (`state_table.meta_unchanged`)? Yes, unless no other process can commit to the state
        (`executor.SoleWriter`): then the guard and its check cost 0.15-0.3 s a refresh for
        nothing (bench/results/2026-11-28-guard)."""
        if self.sole is None:
            executor = self.executor
            self.sole = isinstance(executor, SoleWriter) and executor.sole_writer()
        return not self.sole

    def current_heads(self, relations: Sequence[str], fresh: bool = False) -> dict[str, Head]:
        """The tables' current metadata files and snapshots, read in one statement where
        not read since this run's last statement (`HeadsRead`; `fresh`: read now)."""
        if not isinstance(self.executor, StatementCounter):
            return self._read_heads(relations)
        counter = self.executor
        known = self.heads_read.still(counter.statements_run())
        wanted = list(relations) if fresh else [r for r in relations if r not in known]
        known.update(self._read_heads(wanted))
        # The only statements the read ran are its own REFRESH TABLEs (the SQL path), which
        # write nothing: the heads known before it stand.
        self.heads_read.statements = counter.statements_run()
        return {r: known[r] for r in relations}

    def _read_heads(self, relations: Sequence[str]) -> dict[str, Head]:
        if not relations:
            return {}
        read = None
        if isinstance(self.executor, MetadataReader):
            reader = self.executor
            # refreshes each table in the catalog as it reads it
            read = self.timed("snapshot", lambda: reader.iceberg_heads(relations))
        if read is not None:
            found = {i: (i, *head) for i, head in enumerate(read)}
        else:
            # Catalogs cache table metadata; a commit by another writer (or a row-level
            # operation) may not be visible to a cached entry until it is refreshed.
            for relation in relations:
                self.run("refresh", f"REFRESH TABLE {sql(table(relation))}")
            rows = self.fetch("snapshot", base_tables.heads_sql(relations))
            found = {int(row[0]): row for row in rows}
        heads: dict[str, Head] = {}
        for index, relation in enumerate(relations):
            row = found.get(index)
            if row is None:
                raise BaseRelationError(self.model, relation, "has no Iceberg metadata log")
            heads[relation] = Head(
                str(row[1]),
                None if row[2] is None else int(row[2]),
                None if row[3] is None else int(row[3]),
            )
        return heads

    def table_metadata(self, relation: str, head: Head) -> base_tables.TableMetadata:
        """The facts of the table's current metadata file (read only when it changed, and
        once per run)."""
        known = self.metadata_read.get(head.metadata)
        if known is not None:
            return known
        try:
            text = None
            if isinstance(self.executor, MetadataReader):
                reader = self.executor
                text = self.timed("metadata", lambda: reader.iceberg_metadata_json(head.metadata))
            if text is not None:
                rows: list[tuple] = [(text,)]
            else:
                rows = self.fetch("metadata", base_tables.metadata_file_sql(head.metadata))
            parsed = base_tables.parse_metadata(head.metadata, rows)
        except Exception as e:
            raise BaseRelationError(
                self.model,
                relation,
                f"has Iceberg metadata that cannot be read ({head.metadata})",
                str(e)[:300],
            ) from e
        self.metadata_read[head.metadata] = parsed
        return parsed

    def table_columns(self, relation: str) -> list[tuple[str, str]]:
        """A table's (column, type) pairs as `DESCRIBE TABLE` lists them, from the session's
        catalog where it can answer (no statement: a DESCRIBE cost 0.04-0.056 s), else
        DESCRIBEd (which raises for a relation that cannot be read)."""
        found = None
        if isinstance(self.executor, MetadataReader):
            reader = self.executor
            found = self.timed("describe", lambda: reader.iceberg_columns(relation))
        if found is None:
            found = describe_columns(
                self.fetch("describe", f"DESCRIBE TABLE {sql(table(relation))}")
            )
        return found

    def state_types(self) -> dict[str, str]:
        """The state table's column types (lower-case names, `table_columns`)."""
        if self.columns is None:
            self.columns = {n.lower(): t for n, t in self.table_columns(self.target.state)}
        return self.columns

    def merge_scope(
        self, relation: str, columns: Sequence[str], alias: str, changed: int
    ) -> exp.Expression | None:
        """The changed keys of `relation` (`changed` rows) as a condition on the state's rows
        (`merge_scope.py`), sized by the state's current snapshot."""

        def records() -> int | None:
            totals = self.snapshot_totals(self.target.state, "state records")
            return None if totals is None else base_tables.total_records(totals[1])

        return merge_scope.merge_scope(
            relation,
            columns,
            alias,
            changed=changed,
            types=self.state_types(),
            state_rows=records,
            fetch=lambda statement: self.fetch("merge scope", statement),
        )

    def state_rows(self) -> int:
        """The new state's data rows, for the log line: `summary_rows` (the state was just
        written, so it has no delete file), else counted."""
        found = self.summary_rows()
        if found is not None:
            return found
        state = self.target.state
        select = f"SELECT COUNT(*) FROM {sql(table(state))} WHERE {state_table.ROW} = 0"
        return int(self.fetch("count", select)[0][0])

    def summary_rows(self) -> int | None:
        """The state's data rows as its current snapshot's `total-records` less the metadata
        row, where the JVM reads it (no Spark job; else None). Exact while the state has no
        delete file: until the first refresh after a build."""
        totals = self.snapshot_totals(self.target.state, "count")
        records = None if totals is None else base_tables.total_records(totals[1])
        if records is not None and records >= 1:
            return records - 1
        return None

    def snapshot_totals(self, relation: str, label: str) -> tuple[int, dict[str, str]] | None:
        """The table's snapshot count and current snapshot's summary where the JVM reads
        them (else None), read once between two statements (`HeadsRead`), timed as `label`."""
        if not isinstance(self.executor, MetadataReader):
            return None
        reader = self.executor
        memo: dict[str, tuple[int, dict[str, str]]] | None = None
        if isinstance(reader, StatementCounter):
            self.heads_read.still(reader.statements_run())
            memo = self.heads_read.totals
            if relation in memo:
                return memo[relation]
        found = self.timed(label, lambda: reader.iceberg_snapshot_totals(relation))
        if memo is not None and found is not None:
            memo[relation] = found
        return found
