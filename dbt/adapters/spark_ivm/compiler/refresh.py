"""refresh: build or incrementally refresh one ivm model, speaking only SQL to an executor.

Storage. The model's relation is a view over the data rows of its state table
(`<model>__ivm_state`, Iceberg, merge-on-read). The state table also holds one metadata row
(`__ivm_row__ = 1`) whose JSON records the hash of the model SQL and, per base table, the
snapshot id the state reflects (its watermark).

Atomicity. Everything a refresh computes before its commit goes to scratch relations (logs,
the delta, recomputed groups: cached session views, see `render.create_scratch_sql`). The
commit is ONE MERGE INTO the state table that applies the delta and advances the metadata
row's watermarks together: one Iceberg commit, so readers of the view see the old state or
the new one, never a mix, and a failure at any earlier point leaves state and watermarks as
they were; the next run recomputes the scratch relations from the same watermarks. No delta
is applied twice and none is skipped.

(The view itself is never replaced by a refresh: with Iceberg's Hive-backed SparkSessionCatalog
`CREATE OR REPLACE VIEW` keeps the old view text, so a view is only dropped and created by a
full build.)

Steps of a refresh: pin snapshots -> write logs -> delta table -> recompute -> commit.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler import capture, pruning, render
from dbt.adapters.spark_ivm.compiler.analyze import analyze, base_relations
from dbt.adapters.spark_ivm.compiler.delta import TermRenderer
from dbt.adapters.spark_ivm.compiler.errors import BaseRelationError, InjectedFailure
from dbt.adapters.spark_ivm.compiler.ir import Query
from dbt.adapters.spark_ivm.compiler.plan import Plan, plan
from dbt.adapters.spark_ivm.compiler.templates import sql, table

FORMAT_VERSION = "1"
FAIL_ENV = "DBT_SPARK_IVM_FAIL_AFTER"
# Key values are collected into the driver (for pruning) only from logs up to this size.
MAX_COLLECTED_LOG_ROWS = 100_000
STEPS = ("capture", "logs", "delta", "recompute", "commit")


class Executor(Protocol):
    """Runs SQL on the model's connection (the dbt connection in the plugin)."""

    def execute(self, statement: str) -> None: ...

    def fetch(self, statement: str) -> list[tuple]: ...


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

    def changelog_view(self, index: int) -> str:
        return self._scratch(f"cl_{index}")


@dataclass
class Outcome:
    """What the materialization commits and reports."""

    mode: str
    reason: str
    main_sql: str
    summary: str
    timings: list[tuple[str, float]] = field(default_factory=list)


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


def is_iceberg(props: dict[str, str]) -> bool:
    """Iceberg's own tables report `format=iceberg/...`; the HMS entry says table_type=ICEBERG."""
    return props.get("format", "").lower().startswith("iceberg") or (
        props.get("table_type", "").upper() == "ICEBERG"
    )


def sql_hash(compiled_sql: str) -> str:
    return hashlib.sha256(f"{FORMAT_VERSION}\n{compiled_sql.strip()}".encode()).hexdigest()[:16]


@dataclass
class Maintainer:
    """Builds or refreshes one model. Decisions are pure; SQL goes through `executor`."""

    executor: Executor
    model: str
    compiled_sql: str
    target: Target
    existing: str | None  # None, "view" or "table": what the relation is now
    full_refresh: bool = False
    log: Callable[[str], None] = print
    timings: list[tuple[str, float]] = field(default_factory=list)
    scratch: list[str] = field(default_factory=list)  # session views this refresh created

    # -- plumbing -------------------------------------------------------------------------
    def _run(self, label: str, statement: str) -> None:
        start = time.monotonic()
        self.executor.execute(statement)
        self.timings.append((label, time.monotonic() - start))

    def _fetch(self, label: str, statement: str) -> list[tuple]:
        start = time.monotonic()
        rows = self.executor.fetch(statement)
        self.timings.append((label, time.monotonic() - start))
        return rows

    def _checkpoint(self, step: str) -> None:
        if os.environ.get(FAIL_ENV) == step:
            raise InjectedFailure(f"ivm model '{self.model}': injected failure after step {step}")

    # -- facts ----------------------------------------------------------------------------
    def _properties(self, relation: str) -> dict[str, str]:
        return table_properties(lambda q: self._fetch("properties", q), relation)

    def _base_facts(self, relations: list[str]) -> dict[str, list[tuple[str, str]]]:
        schemas: dict[str, list[tuple[str, str]]] = {}
        for relation in relations:
            try:
                props = self._properties(relation)
            except Exception as e:
                raise BaseRelationError(self.model, relation, "cannot be read", str(e)[:300]) from e
            if not is_iceberg(props):
                raise BaseRelationError(
                    self.model,
                    relation,
                    "is not an Apache Iceberg table (views, seeds and parquet/hive tables have "
                    "no snapshots to read changes from)",
                    "Create it with file_format='iceberg' (e.g. `+file_format: iceberg` for "
                    "seeds and table models), or use materialized='table' for this model.",
                )
            rows = self._fetch("describe", f"DESCRIBE TABLE {sql(table(relation))}")
            schemas[relation] = describe_columns(rows)
        return schemas

    def _current_snapshot(self, relation: str) -> int | None:
        # Catalogs cache table metadata; a commit by another writer (or a row-level
        # operation) may not be visible to a cached entry until it is refreshed.
        self._run("refresh", f"REFRESH TABLE {sql(table(relation))}")
        rows = self._fetch("snapshot", capture.current_snapshot_sql(relation))
        return int(rows[0][0]) if rows else None

    def _plan(self, default_db: str) -> Plan:
        relations = base_relations(self.compiled_sql, default_db)
        schemas = self._base_facts(relations)
        query = analyze(self.compiled_sql, self.model, schemas, default_db)
        outputs = describe_columns(
            self._fetch("describe query", f"DESCRIBE QUERY {self.compiled_sql}")
        )
        args = [a.arg for a in query.aggregates]
        present = [a for a in args if a is not None]
        arg_types: list[str | None] = [None] * len(args)
        if present:
            probe = render.probe_select(query, present)
            types = [
                t
                for _, t in describe_columns(
                    self._fetch("describe args", f"DESCRIBE QUERY {probe}")
                )
            ]
            it = iter(types)
            arg_types = [next(it) if a is not None else None for a in args]
        return plan(query, outputs, arg_types)

    # -- the two modes --------------------------------------------------------------------
    def run(self) -> Outcome:
        default_db = self.target.schema.lower()
        the_plan = self._plan(default_db)
        for note in the_plan.query.notes:
            self.log(f"ivm model '{self.model}': {note}")
        digest = sql_hash(self.compiled_sql)
        meta = self._meta() if self.existing == "view" else None
        reason = self._rebuild_reason(meta, digest, the_plan)
        if reason is None:
            assert meta is not None
            try:
                outcome = self._refresh(the_plan, meta, digest)
            finally:
                self._drop_scratch()
            if isinstance(outcome, Outcome):
                return outcome
            reason = outcome
        return self._build(the_plan, digest, reason)

    def _compute_scratch(self, label: str, name: str, select: exp.Expression) -> None:
        """Compute a scratch relation (see `render.create_scratch_sql`)."""
        self.scratch.append(name)
        for statement in render.create_scratch_sql(name, select):
            self._run(label, statement)

    def _drop_scratch(self) -> None:
        """Release the refresh's cached views (also after a failure: they hold memory)."""
        while self.scratch:
            view = self.scratch.pop()
            try:
                self._run("drop scratch", render.drop_scratch_sql(view))
            except Exception as e:  # noqa: BLE001 - cleanup must not mask the refresh's outcome
                self.log(f"ivm model '{self.model}': could not drop {view}: {str(e)[:200]}")

    def _meta(self) -> dict | None:
        """The committed metadata row, or None when there is no readable ivm state."""
        props = self._properties(self.target.view)
        if props.get("ivm.format") != FORMAT_VERSION:
            return None
        try:
            rows = self._fetch("meta", render.meta_sql(self.target.state))
        except Exception:  # noqa: BLE001 - a missing state table means: rebuild
            return None
        if len(rows) != 1 or rows[0][0] is None:
            return None
        meta = json.loads(rows[0][0])
        meta["view_sql_hash"] = props.get("ivm.sql_hash")
        return meta

    def _rebuild_reason(self, meta: dict | None, digest: str, the_plan: Plan) -> str | None:
        if self.existing is None:
            return "first run"
        if self.full_refresh:
            return "--full-refresh"
        if meta is None:
            return f"the existing {self.existing} {self.target.view} has no ivm state"
        if meta.get("sql_hash") != digest or meta.get("view_sql_hash") != digest:
            return "the model SQL changed since its state was built"
        if sorted(meta.get("watermarks", {})) != sorted(the_plan.query.relations):
            return "the model's base relations changed"
        return None

    def _pin(self, the_plan: Plan) -> dict[str, int | None]:
        pinned = {r: self._current_snapshot(r) for r in the_plan.query.relations}
        self._checkpoint("capture")
        return pinned

    @staticmethod
    def _meta_json(digest: str, watermarks: dict[str, int | None]) -> str:
        return json.dumps({"sql_hash": digest, "watermarks": watermarks}, sort_keys=True)

    def _build(self, the_plan: Plan, digest: str, reason: str) -> Outcome:
        self.log(f"ivm model '{self.model}': full build ({reason})")
        pinned = self._pin(the_plan)
        state = self.target.state
        versions = render.Versions(old={}, new=pinned, logs={})
        renderer = TermRenderer(the_plan.query, render.leaf_at(the_plan.query, versions))
        select = render.initial_state_select(the_plan, renderer, self._meta_json(digest, pinned))
        self._run("build state", render.create_state_sql(state, select))
        rows = self._fetch(
            "count", f"SELECT COUNT(*) FROM {sql(table(state))} WHERE {render.ROW} = 0"
        )
        props = {
            "ivm.format": FORMAT_VERSION,
            "ivm.sql_hash": digest,
            "ivm.state_table": state,
            "ivm.sql": self.compiled_sql.strip(),
        }
        prop_sql = ", ".join(
            f"{sql(exp.Literal.string(k))} = {sql(exp.Literal.string(v))}" for k, v in props.items()
        )
        main_sql = (
            f"CREATE VIEW {sql(table(self.target.view))} TBLPROPERTIES ({prop_sql}) AS "
            f"{render.view_select(the_plan, state)}"
        )
        return Outcome(
            mode="build",
            reason=reason,
            main_sql=main_sql,
            summary=f"built ({reason}): {rows[0][0]} state rows",
            timings=self.timings,
        )

    def _capture(
        self, query: Query, watermarks: dict[str, int | None], pinned: dict[str, int | None]
    ) -> tuple[dict[str, str], dict[str, int]] | str:
        """Write one compacted log per changed base relation; a rebuild reason when a base
        table's lineage is broken (its change since the watermark cannot be read)."""
        logs: dict[str, str] = {}
        counts: dict[str, int] = {}
        for index, relation in enumerate(query.relations):
            old, new = watermarks.get(relation), pinned[relation]
            if old == new:
                counts[relation] = 0
                continue
            snaps = capture.parse_snapshots(
                self._fetch("snapshots", capture.snapshots_sql(relation))
            )
            method = capture.choose_method(snaps, old, new)
            if method is None:
                return f"base table {relation} was replaced or rolled back since the last refresh"
            if method is capture.CaptureMethod.NONE or new is None:
                counts[relation] = 0
                continue
            columns = [c for c, _ in query.columns_of(relation)]
            log_table = self.target.log(index)
            if method is capture.CaptureMethod.CHANGELOG:
                view = self.target.changelog_view(index)
                calls, select = capture.changelog_sqls(relation, old, new, view, columns)
                self.scratch.append(view)
                for call in calls:
                    self._run("changelog", call)
            else:
                select = capture.version_diff_select(relation, old, new, columns)
            self._compute_scratch(f"log {relation}", log_table, select)
            n = int(self._fetch("count", f"SELECT COUNT(*) FROM {sql(table(log_table))}")[0][0])
            counts[relation] = n
            if n:
                logs[relation] = log_table
        return logs, counts

    def _key_ranges(
        self, query: Query, logs: dict[str, str], counts: dict[str, int]
    ) -> dict[tuple[int, str], pruning.KeyRange]:
        """The join keys each changed input's log touches, for `pruning.prune_terms`: one
        pass per log; values are listed only for logs small enough to collect."""
        wanted: dict[str, list[str]] = {}
        for link in pruning.key_links(query):
            relation = query.inputs[link.delta].relation
            if relation in logs and link.delta_column not in wanted.setdefault(relation, []):
                wanted[relation].append(link.delta_column)
        by_relation: dict[str, dict[str, pruning.KeyRange]] = {}
        for relation, columns in wanted.items():
            if not columns:
                continue
            with_values = counts.get(relation, 0) <= MAX_COLLECTED_LOG_ROWS
            row = self._fetch(
                "key ranges", pruning.key_stats_sql(logs[relation], columns, with_values)
            )[0]
            by_relation[relation] = pruning.parse_key_stats(
                row, columns, with_values, dict(query.columns_of(relation))
            )
        return {
            (i, column): key_range
            for i, inp in enumerate(query.inputs)
            for column, key_range in by_relation.get(inp.relation, {}).items()
        }

    def _refresh(self, the_plan: Plan, meta: dict, digest: str) -> Outcome | str:
        """The incremental refresh, or the reason it cannot be done (then: rebuild)."""
        query = the_plan.query
        state = self.target.state
        watermarks: dict[str, int | None] = {
            k: (None if v is None else int(v)) for k, v in meta["watermarks"].items()
        }
        pinned = self._pin(the_plan)
        captured = self._capture(query, watermarks, pinned)
        if isinstance(captured, str):
            return captured
        logs, counts = captured
        self._checkpoint("logs")
        changes = ", ".join(f"{r}: {n} delta rows" for r, n in counts.items())
        new_meta = self._meta_json(digest, pinned)

        inserted = updated = deleted = recomputed = 0
        commit: str | None = None
        if logs:
            versions = render.Versions(old=watermarks, new=pinned, logs=logs)
            renderer = TermRenderer(query, render.leaf_at(query, versions), versions.changed(query))
            key_ranges = self._key_ranges(query, logs, counts)
            compacted = render.compacted_delta_select(the_plan, renderer, key_ranges)
            assert compacted is not None
            delta_select = render.delta_table_select(the_plan, compacted, state)
            self._compute_scratch("delta", self.target.delta, delta_select)
            stats = self._fetch("stats", render.stats_sql(self.target.delta))[0]
            inserted, updated, deleted, recomputed = (int(x or 0) for x in stats)
            self._checkpoint("delta")
            if inserted or updated or deleted:
                recomputed_table = None
                if recomputed:
                    recomputed_table = self.target.recomputed
                    select = render.recompute_select(the_plan, renderer, self.target.delta)
                    self._compute_scratch("recompute", recomputed_table, select)
                self._checkpoint("recompute")
                types = {
                    n.lower(): t
                    for n, t in describe_columns(
                        self._fetch("describe", f"DESCRIBE TABLE {sql(table(state))}")
                    )
                }
                commit = render.merge_sql(
                    the_plan, state, self.target.delta, recomputed_table, new_meta, types
                )
        if commit is None and pinned != watermarks:
            commit = render.advance_meta_sql(state, new_meta)
        if commit is not None:
            self._run("commit", commit)
            self._checkpoint("commit")
        if inserted or updated or deleted:
            summary = f"refreshed ({changes}); state rows +{inserted} ~{updated} -{deleted}" + (
                f", {recomputed} groups recomputed" if recomputed else ""
            )
        else:
            why = "no base table changed" if not logs else "the changes do not affect the view"
            summary = f"no MERGE: {why} ({changes})"
        return Outcome(
            mode="refresh",
            reason="incremental",
            main_sql=f"REFRESH TABLE {sql(table(self.target.view))}",
            summary=summary,
            timings=self.timings,
        )
