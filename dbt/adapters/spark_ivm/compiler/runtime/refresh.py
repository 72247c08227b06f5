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
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial

from dbt.adapters.spark_ivm.compiler import render
from dbt.adapters.spark_ivm.compiler.capture import delta_log
from dbt.adapters.spark_ivm.compiler.errors import BaseRelationError
from dbt.adapters.spark_ivm.compiler.operators import union, window
from dbt.adapters.spark_ivm.compiler.operators.delta import TermRenderer
from dbt.adapters.spark_ivm.compiler.operators.top_k import TopK
from dbt.adapters.spark_ivm.compiler.optimize import factored
from dbt.adapters.spark_ivm.compiler.plan import Plan, Shape
from dbt.adapters.spark_ivm.compiler.runtime import base_tables, cost, view
from dbt.adapters.spark_ivm.compiler.runtime.commit import FAIL_ENV, STEPS, CommitWriter
from dbt.adapters.spark_ivm.compiler.runtime.facts import (
    FORMAT_VERSION,
    Head,
    ScratchWriter,
)
from dbt.adapters.spark_ivm.compiler.runtime.outcome import (
    FIRST_RUN,
    Mode,
    Outcome,
    Rebuild,
    StateRows,
)
from dbt.adapters.spark_ivm.compiler.runtime.state_meta import StateMeta, written
from dbt.adapters.spark_ivm.compiler.runtime.view import STATE_TABLE, ViewDocs
from dbt.adapters.spark_ivm.compiler.sql.templates import sql, table

__all__ = [
    "FAIL_ENV",
    "REBUILD_STEP",
    "STATE_TABLE",
    "STEPS",
    "Maintainer",
    "Mode",
    "Outcome",
    "Rebuild",
    "StateRows",
    "sql_hash",
]


#: `FAIL_ENV` step of a rebuild in place: just before its one commit.
REBUILD_STEP = "rebuild"


def sql_hash(compiled_sql: str) -> str:
    return hashlib.sha256(f"{FORMAT_VERSION}\n{compiled_sql.strip()}".encode()).hexdigest()[:16]


@dataclass(kw_only=True)
class Maintainer(CommitWriter):
    """Builds or refreshes one model. Decisions are pure; SQL goes through `executor`."""

    existing: str | None  # None, "view" or "table": what the relation is now
    full_refresh: bool = False
    # The model's own SQL where `compiled_sql` is a rewrite of it (`chain.py`): the view's
    # `ivm.sql`, which `ivm_consistent` compares the relation with.
    user_sql: str | None = None
    view_properties: dict[str, str] = field(default_factory=dict)  # more view properties
    rebuild_because: str | None = None  # the model's plan changed (`chain.py`): rebuild
    # Why the SQL differs from the state's when a view it reads changed (`views.py`).
    sql_changed_because: str | None = None
    # An auxiliary state (`chain.py`): keep the scratch relations after the run (the caller
    # releases them; `changed_keys` says where the changed state keys are).
    keep_scratch: bool = False
    # The model's ORDER BY .. LIMIT (`top_k.py`): its view applies it to the state's rows.
    top: TopK | None = None
    docs: ViewDocs | None = None  # dbt's `persist_docs` for the view (`view.py`)
    committed: bool = False  # this run's refresh committed to the state table
    last_plan: Plan | None = None  # the plan of this run (None: no base changed, not planned)
    # The model's `ivm_refresh` (`cost.py`), and the state's runs before this one.
    policy: cost.Policy = cost.Policy.AUTO
    runs: list[cost.Run] = field(default_factory=list)
    started_ms: int = field(default_factory=lambda: int(time.time() * 1000))

    # -- the two modes --------------------------------------------------------------------
    def run(self) -> Outcome:
        default_db = self.target.schema.lower()
        digest = sql_hash(self.compiled_sql + (self.top.suffix if self.top else ""))
        meta = self.read_meta() if self.existing == "view" and not self.full_refresh else None
        heads: dict[str, Head] | None = None
        facts: dict | None = None
        if meta is not None and self._same_model(meta, digest, default_db):
            try:
                heads = self.current_heads(list(meta.watermarks))
            except Exception:  # noqa: BLE001 - e.g. a base replaced by a view: the full path says so
                heads = None
            self._checkpoint("capture")
        if meta is not None and heads is not None:
            if all(meta.base(r).get("metadata") == h.metadata for r, h in heads.items()):
                # No base table's metadata file moved: nothing can have changed, and the
                # model need not even be planned (one metadata query for all bases).
                return self._unchanged(heads)
            # Timing the last run costs a read of the state's head (and a reload of its
            # table); only `auto` decides by the times.
            auto = self.policy is cost.Policy.AUTO
            self.runs = self._history(meta) if auto else cost.history(meta.recorded)
            facts = self._recorded_facts(meta, heads)
        the_plan = self.plan_state(default_db, facts)
        self.last_plan = the_plan
        for note in the_plan.query.notes:
            self.log(f"ivm model '{self.model}': {note}")
        reason = self._rebuild_reason(meta, digest, the_plan)
        in_place = False
        if reason is None:
            assert meta is not None
            try:
                return self._refresh(the_plan, meta, digest, heads)
            except Rebuild as rebuild:
                reason, in_place = rebuild.reason, rebuild.in_place
            finally:
                self._drop_scratch()
        return self._build(the_plan, digest, reason, in_place)

    def _history(self, meta: StateMeta) -> list[cost.Run]:
        """The state's recorded runs, the last one timed by the state's last commit (read
        only when a base changed: a run that finds no change reads one head per base)."""
        try:
            committed = self.current_heads([self.target.state])[self.target.state].updated_ms
        except Exception:  # noqa: BLE001 - the refresh finds out what is wrong with the state
            committed = None
        return cost.timed(cost.history(meta.recorded), committed)

    def _unchanged(self, heads: dict[str, Head]) -> Outcome:
        changes = ", ".join(f"{r}: 0 delta rows" for r in heads)
        return Outcome(
            mode=Mode.REFRESH,
            reason="incremental",
            main_sql=f"REFRESH TABLE {sql(table(self.target.view))}",
            summary=f"no MERGE: no base table changed ({changes})",
            timings=self.timings,
            rows=StateRows(),
        )

    def _drop_scratch(self) -> None:
        """Release the refresh's cached views (also after a failure: they hold memory)."""
        if self.keep_scratch:
            return  # the caller reads the delta table first (`release_scratch`)
        while self.scratch:
            view = self.scratch.pop()
            try:
                if isinstance(self.executor, ScratchWriter):
                    drop = partial(self.executor.drop_scratch_view, view)
                    if self._timed("drop scratch", drop):
                        continue
                self._run("drop scratch", render.drop_scratch_sql(view))
            except Exception as e:  # noqa: BLE001 - cleanup must not mask the refresh's outcome
                self.warn(f"ivm model '{self.model}': could not drop {view}: {str(e)[:200]}")

    def release_scratch(self) -> None:
        """Drop the scratch relations a run with `keep_scratch` left."""
        self.keep_scratch = False
        self._drop_scratch()

    def _rebuild_reason(self, meta: StateMeta | None, digest: str, the_plan: Plan) -> str | None:
        if self.existing is None:
            return FIRST_RUN
        if self.full_refresh:
            return "--full-refresh"
        if self.rebuild_because is not None:
            return self.rebuild_because
        if meta is None and self.found_format not in (None, FORMAT_VERSION):
            return (
                f"its state was built in format {self.found_format} by another version of "
                f"dbt-spark-ivm (this one keeps format {FORMAT_VERSION})"
            )
        if meta is None:
            return f"the existing {self.existing} {self.target.view} has no ivm state"
        if meta.sql_hash != digest or meta.view_sql_hash != digest:
            return self.sql_changed_because or "the model SQL changed since its state was built"
        if sorted(meta.watermarks) != sorted(the_plan.query.relations):
            return "the model's base relations changed"
        outputs = [list(c) for c in zip(the_plan.output_names, the_plan.output_types)]
        if meta.outputs != outputs:
            return f"the model's result columns changed: {meta.outputs} -> {outputs}"
        return None

    def _pin(self, relations: Sequence[str]) -> dict[str, Head]:
        heads = self.current_heads(relations)
        self._checkpoint("capture")
        return heads

    def _choose(
        self,
        meta: StateMeta,
        heads: dict[str, Head],
        metadata: dict[str, base_tables.TableMetadata],
        bases: dict,
    ) -> cost.Run:
        """This run's record; `Rebuild` (in place) where the policy or the estimates say
        rebuild (`cost.py`). Reads nothing: the changed inputs' metadata is read already."""
        heads_now = {r: h.snapshot for r, h in heads.items()}
        changes = cost.changes(metadata, meta.watermarks, heads_now)
        if changes is None:
            return cost.Run(cost.REFRESH, self.started_ms, None)
        inputs = cost.input_bytes(bases)
        choice = cost.weigh(self.policy, self.runs, changes, inputs)
        if choice.rebuild:
            raise Rebuild(choice.why, in_place=True)
        if self.policy is cost.Policy.AUTO and choice.guess and choice.guess.rebuild is not None:
            self.log(f"ivm model '{self.model}': refresh: {choice.why}")
        return cost.Run(cost.REFRESH, self.started_ms, None, sum(c.bytes for c in changes), inputs)

    def _build(self, the_plan: Plan, digest: str, reason: str, in_place: bool = False) -> Outcome:
        how = "rebuild in place" if in_place else "full build"
        self.log(f"ivm model '{self.model}': {how} ({reason})")
        heads = self._pin(the_plan.query.relations)
        read = the_plan.query.columns_read()
        bases = {
            r: base_tables.fingerprint(self.table_metadata(r, head), read[r], head.snapshot)
            for r, head in heads.items()
        }
        pinned = {r: h.snapshot for r, h in heads.items()}
        state = self.target.state
        live = frozenset(r for r, b in bases.items() if b["live"])
        versions = render.Versions(old={}, new=pinned, logs={}, live=live)
        inputs = cost.input_bytes(bases)
        run = cost.Run(cost.REBUILD if in_place else cost.BUILD, self.started_ms, None, 0, inputs)
        meta = written(digest, the_plan, pinned, bases, cost.remembered(self.runs, run))
        renderers = [
            TermRenderer(q, render.leaf_at(q, versions))
            for q in [b.query for b in the_plan.branches] or [the_plan.query]
        ]
        if the_plan.branches:
            select = union.initial_select(the_plan, renderers, meta)
        elif the_plan.shape is Shape.WINDOW:
            select = window.initial_select(the_plan, renderers[0], meta)
        else:
            select = render.initial_state_select(the_plan, renderers[0], meta)
        if in_place:
            # One commit: readers see the old rows until it, and a reader of this model's
            # delta log finds a commit with no entry and reads the version diff instead.
            self._checkpoint(REBUILD_STEP)
            self._run("build state", render.overwrite_state_sql(state, select))
        else:
            for statement in render.create_state_sql(state, select):
                self._run("build state", statement)
            if self.publish:
                for statement in delta_log.create_sql(state):
                    self._run("delta log", statement)
        try:
            self._check_unmoved(heads, live)
        except BaseRelationError:
            # Its rows may hold a later commit than its watermarks say: never refresh it.
            self._run("build state", render.drop_state_sql(state))
            raise
        rows = self._state_rows()
        if in_place:  # the view is the one there: same SQL, same state table
            main_sql = f"REFRESH TABLE {sql(table(self.target.view))}"
        else:
            main_sql = view.create_view_sql(
                self.target,
                the_plan,
                digest,
                (self.user_sql or self.compiled_sql).strip(),
                self.view_properties,
                self.top,
                self.docs,
            )
        return Outcome(
            mode=Mode.BUILD,
            reason=reason,
            main_sql=main_sql,
            summary=f"{'rebuilt in place' if in_place else 'built'} ({reason}): {rows} state rows",
            timings=self.timings,
            rows=StateRows(inserted=rows),
            in_place=in_place,
        )

    def _refresh(
        self, the_plan: Plan, meta: StateMeta, digest: str, heads: dict[str, Head] | None
    ) -> Outcome:
        """The incremental refresh; `Rebuild` with the reason when it cannot be done."""
        query = the_plan.query
        state = self.target.state
        watermarks = meta.watermarks
        if heads is None:
            heads = self._pin(query.relations)
        pinned = {r: h.snapshot for r, h in heads.items()}
        metadata, bases = self._check_bases(query, meta, heads)
        run = self._choose(meta, heads, metadata, bases)
        logs, counts = self._capture(query, watermarks, pinned, metadata)
        self._checkpoint("logs")
        changes = ", ".join(
            f"{r}: {n} delta rows" + (f" ({self.captured[r]})" if r in self.captured else "")
            for r, n in counts.items()
        )
        new_meta = written(digest, the_plan, pinned, bases, cost.remembered(self.runs, run))

        inserted = updated = deleted = recomputed = partitions = rows = 0
        commit: str | None = None
        live = frozenset(r for r, b in bases.items() if b.get("live"))
        if logs:
            versions = render.Versions(old=watermarks, new=pinned, logs=logs, live=live)
            branches = [b.query for b in the_plan.branches] or [query]
            renderers = [
                TermRenderer(q, render.leaf_at(q, versions), versions.changed(q)) for q in branches
            ]
            ranges = [self._key_ranges(q, logs, counts) for q in branches]
            renderer = renderers[0]
            if the_plan.branches:
                compacted = union.compacted_select(the_plan, renderers, ranges)
            else:
                compacted = render.compacted_delta_select(the_plan, renderer, ranges[0])
            assert compacted is not None
            for n, bracket in enumerate(factored.brackets(compacted)):
                name = self.target.bracket(n)
                self._compute_scratch("bracket", name, bracket.this)
                rows = self._count_rows("bracket", name)
                factored.with_bracket_read_from(bracket, table(name), rows)
            if the_plan.shape is Shape.WINDOW:
                commit, partitions, rows = self._window_commit(
                    the_plan, renderer, compacted, new_meta
                )
            else:
                commit, counted = self._delta_commit(the_plan, renderer, compacted, new_meta)
                inserted, updated, deleted, recomputed = counted
            self.data_changed = commit is not None  # a MERGE (else: only the metadata row)
        if commit is None and meta.moved(new_meta):
            commit = render.advance_meta_sql(state, new_meta)
        if commit is not None:
            self._check_unmoved(heads, live)
            before = self.current_heads([state])[state].snapshot if self.publish else None
            self._run("commit", commit)
            self.committed = True
            self._checkpoint("commit")
            if self.publish:
                self._publish(before)
            self._upkeep()
        if partitions:
            summary = (
                f"refreshed ({changes}); {partitions} window partitions recomputed into {rows} rows"
            )
        elif inserted or updated or deleted:
            summary = f"refreshed ({changes}); state rows +{inserted} ~{updated} -{deleted}" + (
                f", {recomputed} groups recomputed" if recomputed else ""
            )
        else:
            why = "no base table changed" if not logs else "the changes do not affect the view"
            summary = f"no MERGE: {why} ({changes})"
        return Outcome(
            mode=Mode.REFRESH,
            reason="incremental",
            main_sql=f"REFRESH TABLE {sql(table(self.target.view))}",
            summary=summary,
            timings=self.timings,
            rows=StateRows(inserted + (rows if partitions else 0), updated, deleted),
        )
