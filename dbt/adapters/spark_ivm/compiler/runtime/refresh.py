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

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from dbt.adapters.spark_ivm.compiler import render
from dbt.adapters.spark_ivm.compiler.errors import ConcurrentCommitError
from dbt.adapters.spark_ivm.compiler.operators.delta import TermRenderer
from dbt.adapters.spark_ivm.compiler.operators.family import operator_of
from dbt.adapters.spark_ivm.compiler.operators.prepare import MetaWrite, Names, Prepared
from dbt.adapters.spark_ivm.compiler.operators.top_k import TopK
from dbt.adapters.spark_ivm.compiler.plan import Plan
from dbt.adapters.spark_ivm.compiler.relations import Target
from dbt.adapters.spark_ivm.compiler.runtime import (
    build,
    choice,
    commit,
    cost,
    facts,
    logs,
    run_history,
    view,
)
from dbt.adapters.spark_ivm.compiler.runtime.facts import FORMAT_VERSION
from dbt.adapters.spark_ivm.compiler.runtime.from_bases import FromBases
from dbt.adapters.spark_ivm.compiler.runtime.logs import Handoff
from dbt.adapters.spark_ivm.compiler.runtime.outcome import (
    FIRST_RUN,
    Mode,
    Outcome,
    Rebuild,
    RebuildDeferred,
    StateRows,
    refresh_rows,
    refresh_summary,
    unchanged,
)
from dbt.adapters.spark_ivm.compiler.runtime.precompute import precompute
from dbt.adapters.spark_ivm.compiler.runtime.session import Head, Session
from dbt.adapters.spark_ivm.compiler.runtime.state_meta import SqlDigest, StateMeta, written
from dbt.adapters.spark_ivm.compiler.runtime.unchanged import unmoved
from dbt.adapters.spark_ivm.compiler.runtime.view import STATE_TABLE, ViewDocs
from dbt.adapters.spark_ivm.compiler.sql import state_table

__all__ = [
    "STATE_TABLE",
    "Maintainer",
    "Mode",
    "Outcome",
    "Rebuild",
    "StateRows",
    "sql_hash",
]


#: Why a state rebuilt past its earlier states is rebuilt from them, once they are brought
#: up to date (`from_bases.py`).
DETACHED = (
    "it was rebuilt from the base tables past its earlier states, which this run brought up to date"
)


def sql_hash(compiled_sql: str, top: TopK | None = None) -> SqlDigest:
    """The digest a state records of its SQL and the model's ORDER BY .. LIMIT over it: of
    the SQL's canonical form, accepting the raw-text digest states built by earlier versions
    record (`state_meta.SqlDigest`)."""
    return SqlDigest.of(compiled_sql + (top.suffix if top else ""), FORMAT_VERSION)


@dataclass(kw_only=True)
class Maintainer:
    """Builds or refreshes one state of a model. Decisions are pure; SQL goes through the
    `session`, and each step is a function over it (`facts`, `logs`, `commit`)."""

    session: Session
    compiled_sql: str
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
    # Changes handed over by an upstream state in this run, by its state table (`chain.py`).
    handoff: dict[str, Handoff] = field(default_factory=dict)
    # Other ivm models read this one: keep its delta log (`capture/delta_log.py`).
    publish: bool = False
    committed: bool = False  # this run's refresh committed to the state table
    # Where the state keys this refresh changed are (an auxiliary state hands them on).
    changed_keys: tuple[str, list[str]] | None = None
    data_changed: bool = False  # this run's commit changed data rows of the state
    found_format: str | None = None  # the state format of the existing view (`facts.Found`)
    last_plan: Plan | None = None  # the plan of this run (None: no base changed, not planned)
    # The planning facts of a state this run found unchanged: no base table's metadata moved
    # since its last commit recorded them, so they plan it without a DESCRIBE (`plan_state`).
    unchanged_facts: dict | None = None
    # The model's `ivm_refresh` (`cost.py`), and the state's runs before this one.
    policy: cost.Policy = cost.Policy.AUTO
    runs: list[run_history.Run] = field(default_factory=list)
    # An earlier state of a model (`walk.py`): a rebuild in place chosen by the policy is
    # left to the model's state, rebuilt past this one (`RebuildDeferred`, `from_bases.py`).
    defer_rebuild: bool = False
    # Reads the snapshots the model's state read past this state when it last did
    # (`choice.choose`, `walk.py`).
    defer_since: Callable[[], dict[str, int | None] | None] | None = None
    # The model's state rebuilt past its earlier states this run (`from_bases.py`).
    past: FromBases | None = None
    started_ms: int = field(default_factory=choice.now_ms)
    # When this run chose to refresh (None: it did not): a rebuild that the refresh turns
    # into later (`Session.may_recompute`) is timed from here (`build.build`).
    chose_ms: int | None = None
    attempt: run_history.Run | None = None  # the record of the refresh this run chose
    # The state's row as read earlier in this run, before any commit (`unchanged.py`).
    found: facts.Found | None = None

    @property
    def target(self) -> Target:
        return self.session.target

    @property
    def model(self) -> str:
        return self.session.model

    def read_meta(self) -> StateMeta | None:
        """The state's committed metadata row (None: no readable ivm state)."""
        found = self.found if self.found is not None else facts.read_meta(self.session)
        self.found_format = found.format
        return found.meta

    def plan_state(self, default_db: str, recorded: dict | None = None) -> Plan:
        """The state's plan (`facts.plan_state`), from the facts recorded with it where this
        run found it unchanged."""
        if recorded is None:
            recorded = self.unchanged_facts
        return facts.plan_state(self.session, self.compiled_sql, default_db, recorded)

    def plan_unrun(self, default_db: str) -> Plan:
        """The plan of a state this run does not run (`walk._plans_past`): from the facts
        its last commit recorded where it was built from this SQL and they still hold
        (`facts.recorded_facts`: no base's schema changed), else from Spark's DESCRIBEs,
        which a staged query's states past the one deferred took 0.08-0.29 s a run for."""
        meta = self.read_meta() if self.existing == "view" else None
        heads = self._input_heads(meta, default_db)
        recorded = None if heads is None else facts.recorded_facts(self.session, meta, heads)
        return self.plan_state(default_db, recorded)

    def _input_heads(self, meta: StateMeta | None, default_db: str) -> dict[str, Head] | None:
        """The heads of the relations the state's row has watermarks for, where the row was
        built from this SQL (None: it was not, or a head cannot be read, e.g. a base replaced
        by a view: the full path names the problem)."""
        if meta is None or not facts.same_model(
            meta, sql_hash(self.compiled_sql, self.top), self.compiled_sql, default_db, self.model
        ):
            return None
        try:
            return self.session.current_heads(list(meta.watermarks))
        except Exception:  # noqa: BLE001 - see the docstring
            return None

    # -- the two modes --------------------------------------------------------------------
    def run(self) -> Outcome:
        default_db = self.target.schema.lower()
        digest = sql_hash(self.compiled_sql, self.top)
        meta = self.read_meta() if self.existing == "view" and not self.full_refresh else None
        heads = self._input_heads(meta, default_db)
        recorded: dict | None = None
        if heads is not None:
            self.session.checkpoint("capture")
        if meta is not None and heads is not None:
            # Rebuilt past earlier states (`from_bases.py`), a state's inputs may be unchanged
            # where those states' bases changed: it is unchanged only where the bases it read
            # past them did not move either.
            if unmoved(meta, heads) and (self.past is None or self.past.pinned == meta.detached_at):
                # No base table's metadata file moved: nothing can have changed, and the
                # model need not even be planned (one metadata query for all bases).
                self.unchanged_facts = meta.facts
                return unchanged(heads, self.session.timings)
            # Under every policy: the history is read only here, once a base changed.
            self.runs = choice.history(self.session, meta)
            recorded = facts.recorded_facts(self.session, meta, heads)
        plan = self.plan_state(default_db, recorded)
        self.last_plan = plan
        for note in plan.query.notes:
            self.session.log(f"ivm model '{self.model}': {note}")
        reason = self._rebuild_reason(meta, digest, plan)
        in_place = False
        if self.past is not None:
            in_place = reason is None
            reason = reason or self.past.reason
            reason = cost.with_table_hint(reason, self.policy, self.runs) if in_place else reason
        elif reason is None and meta is not None and meta.detached:
            # Its watermarks of the earlier states' tables are of tables it did not read.
            reason, in_place = DETACHED, True
        if reason is None:
            assert meta is not None
            try:
                return self._refresh(plan, meta, digest, heads)
            except Rebuild as rebuild:
                if rebuild.in_place and rebuild.deferrable and self.defer_rebuild:
                    raise RebuildDeferred(rebuild.reason) from None
                reason, in_place = rebuild.reason, rebuild.in_place
                if rebuild.by_cost and self.attempt is not None:
                    self.runs = cost.turned(self.runs, self.attempt, choice.now_ms())
            finally:
                if not self.keep_scratch:  # else the caller reads the delta table first
                    self.session.drop_scratch()
        started = choice.rebuild_started(self.started_ms, self.chose_ms, choice.now_ms())
        return self._build(plan, digest, reason, in_place, started)

    def release_scratch(self) -> None:
        """Drop the scratch relations a run with `keep_scratch` left."""
        self.keep_scratch = False
        self.session.drop_scratch()

    def _rebuild_reason(self, meta: StateMeta | None, digest: str, plan: Plan) -> str | None:
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
        if not meta.built_from(digest):
            return self.sql_changed_because or "the model SQL changed since its state was built"
        if sorted(meta.watermarks) != sorted(plan.query.relations):
            return "the model's base relations changed"
        outputs = [list(c) for c in zip(plan.output_names, plan.output_types)]
        if meta.outputs != outputs:
            return f"the model's result columns changed: {meta.outputs} -> {outputs}"
        return None

    def _pin(self, relations: Sequence[str]) -> dict[str, Head]:
        heads = self.session.current_heads(relations)
        self.session.checkpoint("capture")
        return heads

    def _build(
        self, plan: Plan, digest: str, reason: str, in_place: bool, started_ms: int
    ) -> Outcome:
        return build.build(
            self.session,
            plan,
            lambda pinned, bases, run: written(
                digest,
                plan,
                pinned,
                bases,
                run_history.remembered(self.runs, run),
                self.past.pinned if self.past is not None else None,
            ),
            reason,
            run_history.Run(
                run_history.REBUILD if in_place else run_history.BUILD, started_ms, None, 0
            ),
            in_place=in_place,
            existing=self.existing,
            publish=self.publish,
            past=self.past,
            new_view=lambda: view.create_view_sql(
                self.target,
                plan,
                digest,
                (self.user_sql or self.compiled_sql).strip(),
                self.view_properties,
                self.top,
                self.docs,
            ),
        )

    def _refresh(
        self, plan: Plan, meta: StateMeta, digest: str, heads: dict[str, Head] | None
    ) -> Outcome:
        """The incremental refresh; `Rebuild` with the reason when it cannot be done."""
        query = plan.query
        state = self.target.state
        watermarks = meta.watermarks
        if heads is None:
            heads = self._pin(query.relations)
        pinned = {r: h.snapshot for r, h in heads.items()}
        metadata, bases = facts.check_bases(self.session, query, meta, heads)
        run = choice.choose(
            self.session,
            self.policy,
            self.runs,
            self.started_ms,
            meta,
            heads,
            metadata,
            bases,
            self.defer_since,
        )
        self.chose_ms, self.attempt = choice.now_ms(), run
        captured = logs.write_logs(self.session, query, watermarks, pinned, metadata, self.handoff)
        self.session.checkpoint("logs")
        methods = captured.methods
        changes = ", ".join(
            f"{r}: {n} delta rows" + (f" ({methods[r]})" if r in methods else "")
            for r, n in captured.counts.items()
        )

        def meta_row(inserted: int, updated: int, deleted: int) -> MetaWrite:
            # The state rows are counted before the commit: the run records them in it.
            done = replace(run, rows=(inserted, updated, deleted))
            row = written(digest, plan, pinned, bases, run_history.remembered(self.runs, done))
            wrote.append(row)
            return MetaWrite(read=read, written=row)

        wrote: list[str] = []  # the metadata row the commit writes: the last one made
        read = meta.text if self.session.guards_commits() else None
        new_meta = meta_row(0, 0, 0).written  # a commit of the metadata row alone
        prepared: Prepared | None = None
        statement: str | None = None
        live = frozenset(r for r, b in bases.items() if b.live)
        found = captured.logs
        if found:
            versions = render.Versions(old=watermarks, new=pinned, logs=found, live=live)
            branches = plan.branch_queries
            renderers = [
                TermRenderer(q, render.leaf_at(q, versions), versions.changed(q)) for q in branches
            ]
            ranges = [logs.key_ranges(self.session, q, found, captured.counts) for q in branches]
            operator = operator_of(plan)
            # Timed: the delta is rendered in Python (sqlglot), which is not free for long
            # outer-join chains.
            compacted = self.session.timed(
                "render", lambda: operator.compacted_select(plan, renderers, ranges)
            )
            assert compacted is not None
            precompute(self.session, self.target, compacted, renderers)
            target = self.target
            names = Names(target.state, target.delta, target.recomputed)
            prepared = operator.prepare(
                self.session, names, plan, renderers[0], compacted, meta_row
            )
            self.changed_keys = prepared.changed_keys
            statement = prepared.commit
            self.data_changed = prepared.changes_rows
        if statement is None and meta.moved(new_meta):
            statement = state_table.advance_meta_sql(state, new_meta, read)
        if statement is not None:
            facts.check_unmoved(self.session, heads, live)
            heads_before = self.session.current_heads([state], fresh=True) if self.publish else None
            try:
                self.session.run("commit", statement)
            except Exception as e:
                refusal = commit.refused_for_another_commit(e)
                if refusal is None:
                    raise
                raise ConcurrentCommitError(self.model, state, refusal) from e
            if read is not None:
                facts.check_committed(self.session, wrote[-1])
            self.committed = True
            self.session.checkpoint("commit")
            if heads_before is not None:
                keys = self.changed_keys if self.data_changed else None
                commit.publish(self.session, heads_before[state].snapshot, keys)
            commit.keep_up(self.session, self.publish)
        return Outcome(
            mode=Mode.REFRESH,
            reason="incremental",
            main_sql=None,
            summary=refresh_summary(changes, prepared, bool(found)),
            timings=self.session.timings,
            rows=refresh_rows(prepared),
        )
