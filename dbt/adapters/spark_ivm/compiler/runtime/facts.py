"""facts: what a build or refresh reads before it changes anything, and whether it holds.

The Maintainer (`refresh.py`) decides; this reads, every statement timed: the base tables'
properties and schemas, their heads (current metadata file and snapshot, all bases in one
statement; in session mode through the driver's JVM, `MetadataReader`) and metadata files,
the state's committed metadata row, and the model's plan
(from Spark's DESCRIBEs, or from the facts the last commit recorded while every base keeps
its schema). It also checks that the state can still be trusted (`base_tables`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar, runtime_checkable

from dbt.adapters.spark_ivm.compiler import render
from dbt.adapters.spark_ivm.compiler.errors import BaseRelationError, UncapturableBaseError
from dbt.adapters.spark_ivm.compiler.frontend.analyze import analyze, base_relations
from dbt.adapters.spark_ivm.compiler.ir import Query
from dbt.adapters.spark_ivm.compiler.operators.aggregates import keep_from_env
from dbt.adapters.spark_ivm.compiler.plan import Plan, plan
from dbt.adapters.spark_ivm.compiler.runtime import base_tables
from dbt.adapters.spark_ivm.compiler.runtime.outcome import Rebuild
from dbt.adapters.spark_ivm.compiler.runtime.state_meta import StateMeta
from dbt.adapters.spark_ivm.compiler.sql.templates import sql, table

T = TypeVar("T")

# 2: the metadata row records each base table's identity, schema and the columns read.
FORMAT_VERSION = "5"  # 3: MIN/MAX states keep ranked value lists; 4: views record
# the auxiliary-state choice (`chain.py`), so that a refresh need not plan the model to find it;
# 5: variance and stddev keep shifted moment sums (`aggregates/moments.py`) instead of a value


class Executor(Protocol):
    """Runs SQL on the model's connection (the dbt connection in the plugin)."""

    def execute(self, statement: str) -> None: ...

    def fetch(self, statement: str) -> list[tuple]: ...


@runtime_checkable
class ChangelogReader(Protocol):
    """An executor that can also expose an Iceberg table's raw changelog scan as a temp view
    (the session method; `capture/changelog.py` says why that is cheaper than the CALL)."""

    def changelog_view(self, relation: str, options: dict[str, str], view_name: str) -> bool:
        """Create `view_name` over the `changes` table of `relation` read with `options`;
        False when this connection cannot (then the procedure is used)."""
        ...


@runtime_checkable
class ScratchWriter(Protocol):
    """An executor that can compute a scratch relation into a temp view whose plan is its
    computed rows, not its query (the session method; `render.create_scratch_sql`)."""

    def scratch_view(self, select: str, view_name: str) -> bool:
        """Compute `select` now and expose its rows as `view_name`; False when this
        connection cannot (then `CACHE TABLE .. AS` is used)."""
        ...

    def release_scratch_view(self, view_name: str) -> None:
        """Free the rows `scratch_view` kept for `view_name` (after its view is dropped)."""
        ...

    def drop_scratch_view(self, view_name: str) -> bool:
        """Drop the session's temp view `view_name` (a scratch relation of either kind) and
        free its rows, without a statement; False when this connection cannot (then
        `render.drop_scratch_sql` runs)."""
        ...


@runtime_checkable
class FileScanReader(Protocol):
    """An executor that can read an Iceberg table at a snapshot through some of its data
    files only (the session method; `capture/merge_on_read.py`)."""

    def file_scan_view(
        self, relation: str, snapshot: int, keep: Callable[[str], bool], view_name: str
    ) -> tuple[int, int] | None:
        """Create `view_name` over the rows `relation` had at `snapshot` in the data files
        whose path `keep` accepts; (files read, files planned), or None when this connection
        cannot (then SQL reads the whole version). `release_scratch_view` frees it."""
        ...


@runtime_checkable
class MetadataReader(Protocol):
    """An executor that can read Iceberg table metadata without a Spark job (the session
    method, `session_metadata.py`); each method returns None where it cannot, and the SQL
    path is taken."""

    def iceberg_heads(self, relations: Sequence[str]) -> list[tuple[str, int | None, int]] | None:
        """(current metadata file, current snapshot id, its time) of each table, in order, each table
        refreshed in the session's catalog as `REFRESH TABLE` would."""
        ...

    def iceberg_properties(self, relation: str) -> dict[str, str] | None:
        """The Iceberg table's properties as `SHOW TBLPROPERTIES` lists them."""
        ...

    def iceberg_metadata_json(self, location: str) -> str | None:
        """The JSON of the metadata file at `location`."""
        ...

    def iceberg_snapshot_totals(self, relation: str) -> tuple[int, dict[str, str]] | None:
        """The table's snapshot count and its current snapshot's summary."""
        ...

    def iceberg_columns(self, relation: str) -> list[tuple[str, str]] | None:
        """The table's (column, type) pairs as `DESCRIBE TABLE` lists them."""
        ...

    def iceberg_rows_where(
        self, relation: str, column: str, value: int, selected: Sequence[str]
    ) -> list[tuple] | None:
        """Up to two rows of `SELECT <selected> FROM relation WHERE column = value`."""
        ...

    def iceberg_window_files(
        self, relation: str, snapshot_ids: Sequence[int], path_field: int
    ) -> list[tuple] | None:
        """The files the snapshots added or removed, as `touched_files.entries_sql` reads
        them: (status, content, path, lower and upper bound of field `path_field`)."""
        ...


@dataclass(frozen=True)
class Target:
    """The model's relation and the names of its companions (same schema, clear suffixes)."""

    schema: str
    identifier: str

    @property
    def view(self) -> str:
        return f"{self.schema}.{self.identifier}".lower()

    @property
    def state(self) -> str:
        return f"{self.view}__ivm_state"

    def _scratch(self, kind: str) -> str:
        # Session views are not qualified by a schema, so the name carries the model's.
        return f"__ivm_{kind}_{self.schema}_{self.identifier}".lower()

    @property
    def recomputed(self) -> str:
        return self._scratch("recomputed")

    @property
    def delta(self) -> str:
        return self._scratch("delta")

    def log(self, index: int) -> str:
        return self._scratch(f"log_{index}")

    def bracket(self, index: int) -> str:
        return self._scratch(f"bracket_{index}")

    def changelog_view(self, index: int) -> str:
        return self._scratch(f"cl_{index}")

    def file_scan(self, index: int, new: bool) -> str:
        return self._scratch(f"files_{index}_{'new' if new else 'old'}")


@dataclass(frozen=True)
class Head:
    """A base table's current Iceberg metadata file and snapshot (None: no snapshot yet)."""

    metadata: str
    snapshot: int | None
    # When the metadata file was written (epoch ms): for a state, its last commit of a run
    # (`cost.py` times the run by it).
    updated_ms: int | None = None


def describe_columns(rows: Sequence[tuple]) -> list[tuple[str, str]]:
    """Column (name, type) pairs of a DESCRIBE TABLE / DESCRIBE QUERY result."""
    out: list[tuple[str, str]] = []
    for row in rows:
        name, dtype = (row[0] or "").strip(), (row[1] or "").strip()
        if not name or name.startswith("#"):
            break
        out.append((name, dtype))
    return out


def table_properties(fetch: Callable[[str], list[tuple]], relation: str) -> dict[str, str]:
    """A relation's TBLPROPERTIES as a dict."""
    rows = fetch(f"SHOW TBLPROPERTIES {sql(table(relation))}")
    return {str(r[0]): str(r[1]) for r in rows if len(r) >= 2}


def relation_properties(executor: Executor, relation: str) -> dict[str, str]:
    """A relation's TBLPROPERTIES: an Iceberg table's from the session's catalog when the
    executor can read them there (no statement, `session_metadata.py`), else in SQL, which
    raises when there is no such relation."""
    if isinstance(executor, MetadataReader):
        found = executor.iceberg_properties(relation)
        if found is not None:
            return found
    return table_properties(executor.fetch, relation)


def is_iceberg(props: dict[str, str]) -> bool:
    """Iceberg's own tables report `format=iceberg/...`; the HMS entry says table_type=ICEBERG."""
    return props.get("format", "").lower().startswith("iceberg") or (
        props.get("table_type", "").upper() == "ICEBERG"
    )


@dataclass(kw_only=True)
class FactsReader:
    """Reads (and times) the facts of one model's build or refresh over `executor`."""

    executor: Executor
    model: str
    compiled_sql: str
    target: Target
    log: Callable[[str], None] = print
    # What the user should act on (dbt's warning events: `--warn-error` fails on them).
    warn: Callable[[str], None] = print
    timings: list[tuple[str, float]] = field(default_factory=list)
    # Parsed Iceberg metadata files by location (a file never changes once written).
    metadata_read: dict[str, base_tables.TableMetadata] = field(default_factory=dict)
    # The state format the existing view was built with (None: not an ivm view).
    found_format: str | None = None
    # Table properties already read this run, by relation (`chain.py` reads the view's).
    known_properties: dict[str, dict[str, str]] = field(default_factory=dict)

    def _timed(self, label: str, call: Callable[[], T]) -> T:
        """`call()`, its time recorded under `label` (when it returns)."""
        start = time.monotonic()
        result = call()
        self.timings.append((label, time.monotonic() - start))
        return result

    def _run(self, label: str, statement: str) -> None:
        self._timed(label, lambda: self.executor.execute(statement))

    def timed_fetch(self, label: str, statement: str) -> list[tuple]:
        return self._timed(label, lambda: self.executor.fetch(statement))

    def _properties(self, relation: str) -> dict[str, str]:
        known = self.known_properties.get(relation)
        if known is not None:
            return known
        return self._timed(
            "properties",
            lambda: relation_properties(self.executor, relation),
        )

    def base_facts(self, relations: list[str]) -> dict[str, list[tuple[str, str]]]:
        schemas: dict[str, list[tuple[str, str]]] = {}
        for relation in relations:
            try:
                props = self._properties(relation)
            except Exception as e:
                raise BaseRelationError(self.model, relation, "cannot be read", str(e)[:300]) from e
            if not is_iceberg(props):
                raise UncapturableBaseError(
                    self.model,
                    relation,
                    "is not an Apache Iceberg table (views, seeds and parquet/hive tables have "
                    "no snapshots to read changes from)",
                    "Create it with file_format='iceberg' (e.g. `+file_format: iceberg` for "
                    "seeds and table models), or use materialized='table' for this model.",
                )
            rows = self.timed_fetch("describe", f"DESCRIBE TABLE {sql(table(relation))}")
            schemas[relation] = describe_columns(rows)
        return schemas

    def current_heads(self, relations: Sequence[str]) -> dict[str, Head]:
        """The base tables' current metadata files and snapshots, read in one statement."""
        if not relations:
            return {}
        read = None
        if isinstance(self.executor, MetadataReader):
            reader = self.executor
            # refreshes each table in the catalog as it reads it
            read = self._timed("snapshot", lambda: reader.iceberg_heads(relations))
        if read is not None:
            found = {i: (i, *head) for i, head in enumerate(read)}
        else:
            # Catalogs cache table metadata; a commit by another writer (or a row-level
            # operation) may not be visible to a cached entry until it is refreshed.
            for relation in relations:
                self._run("refresh", f"REFRESH TABLE {sql(table(relation))}")
            rows = self.timed_fetch("snapshot", base_tables.heads_sql(relations))
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
        """The facts of the base table's current metadata file (read only when it changed,
        and once per refresh)."""
        known = self.metadata_read.get(head.metadata)
        if known is not None:
            return known
        try:
            text = None
            if isinstance(self.executor, MetadataReader):
                reader = self.executor
                text = self._timed("metadata", lambda: reader.iceberg_metadata_json(head.metadata))
            if text is not None:
                rows: list[tuple] = [(text,)]
            else:
                rows = self.timed_fetch("metadata", base_tables.metadata_file_sql(head.metadata))
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

    def plan_state(self, default_db: str, facts: dict | None = None) -> Plan:
        """The model's plan. `facts` (the base schemas, result columns and aggregate argument
        types recorded by the last commit) stand in for Spark's DESCRIBEs when no base
        table's schema changed since (`_recorded_facts`)."""
        if facts is not None:
            try:
                schemas = {r: [(n, t) for n, t in cols] for r, cols in facts["schemas"].items()}
                query = analyze(self.compiled_sql, self.model, schemas, default_db)
                outputs = [(n, t) for n, t in facts["outputs"]]
                return plan(query, outputs, list(facts["arg_types"]), keep_from_env())
            except Exception as e:  # noqa: BLE001 - facts damaged by hand: plan from Spark
                self.warn(f"ivm model '{self.model}': recorded facts unusable ({str(e)[:200]})")
        relations = base_relations(self.compiled_sql, default_db, self.model)
        schemas = self.base_facts(relations)
        query = analyze(self.compiled_sql, self.model, schemas, default_db)
        outputs = describe_columns(
            self.timed_fetch("describe query", f"DESCRIBE QUERY {self.compiled_sql}")
        )
        args = [a.arg for a in query.aggregates]
        present = [a for a in args if a is not None]
        arg_types: list[str | None] = [None] * len(args)
        if present:
            probe = render.probe_select(query, present)
            types = [
                t
                for _, t in describe_columns(
                    self.timed_fetch("describe args", f"DESCRIBE QUERY {probe}")
                )
            ]
            it = iter(types)
            arg_types = [next(it) if a is not None else None for a in args]
        return plan(query, outputs, arg_types, keep_from_env())

    def _recorded_facts(self, meta: StateMeta, heads: dict[str, Head]) -> dict | None:
        """The planning facts the last commit recorded, when they still hold: every base
        table is the same table (uuid) with the same schema (Iceberg schema id) as then.
        None: plan from Spark's DESCRIBEs."""
        facts = meta.facts
        if facts is None or set(facts.get("schemas", {})) != set(heads):
            return None
        for relation, head in heads.items():
            before = meta.base(relation)
            if before.get("metadata") == head.metadata:
                continue
            try:
                now = self.table_metadata(relation, head)
            except BaseRelationError:
                return None  # the full path reports it
            if now.uuid != before.get("uuid") or now.schema_id != before.get("schema_id"):
                return None
        return facts

    def _same_model(self, meta: StateMeta, digest: str, default_db: str) -> bool:
        """Is the state the one of this model SQL over the same base relations?"""
        if meta.sql_hash != digest or meta.view_sql_hash != digest:
            return False
        relations = base_relations(self.compiled_sql, default_db, self.model)
        return sorted(meta.watermarks) == sorted(relations) and meta.bases is not None

    def _meta_rows(self) -> list[tuple]:
        """`render.meta_sql`'s rows: in session mode read by the driver (the row's file, no
        Spark job: 0.085-0.1 s a refresh on these 2 cores), else in SQL."""
        state = self.target.state
        if isinstance(self.executor, MetadataReader):
            reader = self.executor
            found = self._timed(
                "meta", lambda: reader.iceberg_rows_where(state, render.ROW, 1, [render.META])
            )
            if found is not None:
                return found
        return self.timed_fetch("meta", render.meta_sql(state))

    def read_meta(self) -> StateMeta | None:
        """The committed metadata row, or None when there is no readable ivm state."""
        props = self._properties(self.target.view)
        self.found_format = props.get("ivm.format")
        if self.found_format != FORMAT_VERSION:
            return None
        try:
            rows = self._meta_rows()
        except Exception:  # noqa: BLE001 - a missing state table means: rebuild
            return None
        if len(rows) != 1 or rows[0][0] is None:
            return None
        # None for a metadata row edited or damaged by hand: rebuild
        return StateMeta.parse(rows[0][0], props.get("ivm.sql_hash"))

    def _check_unmoved(self, heads: dict[str, Head], live: frozenset[str]) -> None:
        """Fail (before a refresh's commit; after a build, whose state is then rebuilt by the
        next run) if a base table read live got a commit since it was pinned: the rows read
        would not be the pinned snapshot's."""
        now = self.current_heads(sorted(live))
        for relation in sorted(live):
            if now[relation].snapshot != heads[relation].snapshot:
                raise BaseRelationError(
                    self.model,
                    relation,
                    "got a commit while the refresh read it (a column it reads was renamed "
                    "after its last commit, so it was read live, not at its snapshot)",
                    "Nothing was applied; run the model again.",
                )

    def _check_bases(
        self, query: Query, meta: StateMeta, heads: dict[str, Head]
    ) -> tuple[dict[str, base_tables.TableMetadata], dict]:
        """The current metadata of every base table whose metadata file changed, and what
        the next state records of each; `Rebuild` when the state cannot be trusted
        (`base_tables`)."""
        read = query.columns_read()
        recorded: dict = meta.bases or {}
        changed: dict[str, base_tables.TableMetadata] = {}
        bases: dict = {}
        for relation, head in heads.items():
            before = recorded.get(relation)
            if before is None:
                raise Rebuild(f"the state has no record of base table {relation}")
            if before.get("metadata") == head.metadata:
                bases[relation] = before
                continue
            try:
                now = self.table_metadata(relation, head)
            except BaseRelationError as e:  # rebuild, and say why
                raise Rebuild(str(e)) from e
            reason = base_tables.untrusted(relation, before, now, read[relation])
            if reason is not None:
                raise Rebuild(reason)
            changed[relation] = now
            bases[relation] = base_tables.fingerprint(now, read[relation], head.snapshot)
        return changed, bases
