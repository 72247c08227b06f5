"""chain: one model maintained as a chain of states, each by its own `Maintainer`.

A model with an auxiliary state (`aux_state.py`) is two states maintained in order: A, over
the facts (its own state table and view, `<model>__ivm_aux`), then the model itself, whose
rewritten query reads A's state table and the dimension. Each state records the snapshots of
the inputs it reflects, and A's state table is one of the model's inputs (docs/architecture.md,
§4, the second atomicity option: "each state commits on its own and records the versions of its
inputs it reflects"). So a failure after A's commit and before the model's leaves the model
at its old watermark of A's state, and the next run reads A's change from there: no delta is
applied twice or skipped, and the model's view shows its old state until then.

Whether a flat model keeps an auxiliary state is chosen once and recorded in its view
(`aux_choice.py`, `ivm_aux_states`); a model with sub-query states is cut into them
(`frontend/stages.py`, `dataflow.cut`) and its states walked the same way (`walk.py`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from dbt.adapters.spark_ivm.compiler import dataflow
from dbt.adapters.spark_ivm.compiler.capture import snapshot_diff
from dbt.adapters.spark_ivm.compiler.errors import UnsupportedQueryError
from dbt.adapters.spark_ivm.compiler.frontend import stages, views
from dbt.adapters.spark_ivm.compiler.frontend.analyze import base_relations
from dbt.adapters.spark_ivm.compiler.operators import top_k
from dbt.adapters.spark_ivm.compiler.plan import Plan
from dbt.adapters.spark_ivm.compiler.relations import Target, auxiliary_name
from dbt.adapters.spark_ivm.compiler.runtime import (
    aux_choice,
    cost,
    facts,
    inputs,
    unchanged,
    upstream,
    walk,
)
from dbt.adapters.spark_ivm.compiler.runtime.chain_states import (
    AUX_SQL,
    CHOICE,
    DEFAULT_MODE,
    STAGES,
    TOP_SQL,
    drop_stages,
    drop_state,
)
from dbt.adapters.spark_ivm.compiler.runtime.config_change import OnChange, held, sql_change
from dbt.adapters.spark_ivm.compiler.runtime.executor import (
    Executor,
    is_iceberg,
)
from dbt.adapters.spark_ivm.compiler.runtime.outcome import Outcome
from dbt.adapters.spark_ivm.compiler.runtime.refresh import Maintainer, sql_hash
from dbt.adapters.spark_ivm.compiler.runtime.relation_reads import RelationReads
from dbt.adapters.spark_ivm.compiler.runtime.session import HeadsRead, Session
from dbt.adapters.spark_ivm.compiler.runtime.state_meta import SqlDigest
from dbt.adapters.spark_ivm.compiler.runtime.view import MODEL_SQL, ViewDocs
from dbt.adapters.spark_ivm.compiler.sql.layout import NO_LAYOUT, Layout
from dbt.adapters.spark_ivm.compiler.sql.templates import sql, table


@dataclass(kw_only=True)
class ChainMaintainer:
    """Builds or refreshes one model: flat, or as its auxiliary state, then the model."""

    executor: Executor
    model: str
    compiled_sql: str
    target: Target
    existing: str | None
    full_refresh: bool = False
    mode: str = DEFAULT_MODE
    policy: cost.Policy = cost.Policy.AUTO  # `ivm_refresh`, for each of its states
    log: Callable[[str], None] = print
    warn: Callable[[str], None] = print  # see `Session.warn`
    timings: list[tuple[str, float]] = field(default_factory=list)
    known: dict[str, dict[str, str]] = field(default_factory=dict)  # properties read
    heads_read: HeadsRead = field(default_factory=HeadsRead)  # heads read (`session.py`)
    # The model's own SQL (`compiled_sql` reads the views it reads through their queries).
    user_sql: str = ""
    # View properties of every state: the digests of the views the model reads (`views.py`).
    view_digests: dict[str, str] = field(default_factory=dict)
    # Why the model's SQL changed when a view's definition did (None: not because of a view).
    views_changed: str | None = None
    created_copies: list[str] = field(default_factory=list)  # snapshot-diff copies made now
    # Other ivm models read this one: its state keeps a delta log (`capture/delta_log.py`).
    publish: bool = False
    # The model's ORDER BY .. LIMIT, applied by its view (`top_k.py`); set by `run`.
    top: top_k.TopK | None = None
    # dbt's `persist_docs` for the model's view (`view.py`); its states' views get none.
    docs: ViewDocs | None = None
    # dbt's `on_configuration_change`: what a change that would rebuild the model does
    # (`config_change.py`).
    on_change: OnChange = OnChange.APPLY
    # dbt-spark's `tblproperties`, `partition_by`, `location_root` (`sql/layout.py`).
    layout: Layout = NO_LAYOUT
    # The states' metadata rows read before the walk (`unchanged.py`), by state table: the
    # walk's maintainers take them rather than read them again (no commit in between).
    rows_read: dict[str, facts.Found] = field(default_factory=dict)

    def session(self, target: Target | None = None, model: str | None = None) -> Session:
        """A session for one of the model's states (its own timings and scratch relations;
        the properties read are shared); `model` names an auxiliary or sub-query state, whose
        table is not partitioned as the model's result is."""
        target = target or self.target
        return Session(
            executor=self.executor,
            model=model or self.model,
            target=target,
            log=self.log,
            warn=self.warn,
            layout=self.layout if target == self.target else self.layout.unpartitioned(),
            known_properties=self.known,
            heads_read=self.heads_read,
        )

    def maintainer(self, **kwargs) -> Maintainer:
        extra = kwargs.pop("view_properties", {})
        target = kwargs.pop("target", self.target)
        base = {
            "session": self.session(target, kwargs.pop("model", None)),
            "view_properties": {
                **({views.VIEWS: json.dumps(self.view_digests)} if self.view_digests else {}),
                **extra,
            },
            "sql_changed_because": self.views_changed,
            "compiled_sql": self.compiled_sql,
            "existing": self.existing,
            "full_refresh": self.full_refresh,
            "policy": self.policy,
        }
        if "compiled_sql" not in kwargs:
            base["user_sql"] = self.user_sql or None
        # Only the model's own state is read by other models (not its aux or stage states),
        # and only the model's own view is limited.
        own = target == self.target
        base["publish"] = self.publish and own
        base["top"] = self.top if own else None
        base["found"] = self.rows_read.get(target.state)
        base["docs"] = self.docs if own else None
        return Maintainer(**{**base, **kwargs})

    def properties_of(self, relation: str, base: bool = False) -> dict[str, str] | None:
        """The relation's properties, None where there is no such relation
        (`RelationReads.properties_of`)."""
        return self.reads().properties_of(relation, base)

    def reads(self) -> RelationReads:
        """What this run reads of the relations around the model, kept where it stands."""
        return RelationReads(self.executor, self.timings, self.known, self.heads_read)

    def read_views(self, props: dict[str, str]) -> None:
        """Replace the views the model reads by their queries (`inputs.read_views`)."""
        self.user_sql = self.user_sql or self.compiled_sql
        start = time.monotonic()
        try:
            found = inputs.read_views(
                self.executor,
                self.user_sql,
                self.target.schema.lower(),
                self.model,
                props.get(views.VIEWS),
                self.reads().is_iceberg_table,
            )
        finally:
            self.timings.append(("views", time.monotonic() - start))
        self.view_digests, self.views_changed = found.digests, found.changed
        if found.expanded_sql is not None:
            self.compiled_sql = found.expanded_sql

    def copy_bases(self, sync: bool = True) -> dict[str, str]:
        """Read every base relation that keeps no snapshots through an Iceberg copy brought
        level with it first (`inputs.sync_copy`; `sync=False`: only read through the
        copies, as they are). Returns the copies by base relation."""
        default_db = self.target.schema.lower()
        copies: dict[str, str] = {}
        for relation in base_relations(self.compiled_sql, default_db, self.model):
            found = self.properties_of(relation, base=True)
            if found is not None and not is_iceberg(found):
                copies[relation] = snapshot_diff.copy_name(self.target.view, relation)
        for relation, copy in copies.items() if sync else ():
            start = time.monotonic()
            try:
                synced = inputs.sync_copy(
                    self.executor,
                    relation,
                    copy,
                    self.properties_of(copy),
                    self.layout.unpartitioned(),
                    self.model,
                )
            finally:
                self.timings.append(("snapshot diff", time.monotonic() - start))
            self.known.pop(copy, None)
            if synced.created:
                self.created_copies.append(copy)
            self.log(synced.said)
        self.compiled_sql = snapshot_diff.read_copies(self.compiled_sql, copies, default_db)
        return copies

    def run(self) -> Outcome:
        props = (self.properties_of(self.target.view) if self.existing == "view" else None) or {}
        if not self.full_refresh and self.on_change is not OnChange.APPLY:
            # Before anything is written: a held change leaves every state as it was.
            change = sql_change(props.get(MODEL_SQL), self.user_sql or self.compiled_sql)
            if change is not None and (kept := self._held(change)) is not None:
                return kept
        self.read_views(props)
        notes = self._stale_upstreams()
        self.copy_bases()
        self.split_top()
        try:
            outcome = self._run(props)
        except UnsupportedQueryError:
            # A refusal creates nothing: not even the copies made for it in this run.
            for copy in self.created_copies:
                self.executor.execute(f"DROP TABLE IF EXISTS {sql(table(copy))} PURGE")
            raise
        return replace(outcome, summary="; ".join([outcome.summary, *notes]))

    def _held(self, change: str) -> Outcome | None:
        """What `on_configuration_change` makes of `change`, which would rebuild the model
        (None: rebuild)."""
        return held(self.on_change, self.model, self.target.view, change, self.warn)

    def split_top(self) -> None:
        """Maintain the model's SELECT without its ORDER BY .. LIMIT; its view applies it."""
        self.top = top_k.split(self.compiled_sql, self.model)
        self.compiled_sql = self.top.inner

    def _stale_upstreams(self) -> list[str]:
        """What the run says of each upstream ivm model it reads that is behind its own base
        tables (`inputs.stale_upstreams`), also logged now."""
        found = upstream.states(
            base_relations(self.compiled_sql, self.target.schema.lower(), self.model)
        )
        if not found:
            return []
        start = time.monotonic()
        notes = inputs.stale_upstreams(
            self.executor, found, self.session().current_heads, self.model
        )
        self.timings.append(("upstream", time.monotonic() - start))
        for note in notes:
            self.log(f"ivm model '{self.model}': {note}")
        return notes

    def _run(self, props: dict[str, str]) -> Outcome:
        if stages.needed(self.compiled_sql):
            return self._staged(props)
        drop_stages(self.executor, self.target, props, keep=0)
        digest = sql_hash(self.compiled_sql)
        chosen = None if self.full_refresh else aux_choice.recorded(props, self.mode, digest)
        if chosen is None:  # not recorded for this SQL and setting: plan the model to choose
            chosen = aux_choice.choose(
                props=props,
                mode=self.mode,
                digest=digest,
                plan_model=lambda: self.maintainer().plan_state(self.target.schema.lower()),
                plan_aux=self._plan_aux,
                state_of_aux=self.target.auxiliary.state,
                rows=lambda found: aux_choice.snapshot_rows(self.executor, found, self.timings),
                log=lambda said: self.log(f"ivm model '{self.model}': {said}"),
            )
        if chosen.reason is not None:
            kept = self._aux_held(chosen.before, chosen.reason)
            if kept is not None:
                return kept
        if chosen.queries is None:
            if AUX_SQL in props:
                self._drop_aux()
            return self._flat(chosen.choice, chosen.reason)
        return self._chain(*chosen.queries, chosen.choice, chosen.reason)

    def _plan_aux(self, aux_sql: str) -> Plan:
        """The plan of the auxiliary state of SQL `aux_sql`, not built yet."""
        aux = self.maintainer(
            model=auxiliary_name(self.model),
            compiled_sql=aux_sql,
            target=self.target.auxiliary,
            existing=None,
        )
        return aux.plan_state(self.target.schema.lower())

    def _aux_held(self, before: str, reason: str) -> Outcome | None:
        """`_held` for a changed `ivm_aux_states` that rebuilds the model (`reason`)."""
        if self.full_refresh:
            return None
        return self._held(f"ivm_aux_states changed from '{before}' to '{self.mode}', so {reason}")

    def _flat(self, choice: str, reason: str | None) -> Outcome:
        """The model as one state (`walk.walk` of `dataflow.flat`)."""
        return walk.walk(
            dataflow.flat(self.compiled_sql, self.target, self.model),
            executor=self.executor,
            maintainer=self.maintainer,
            exists=lambda view: self.properties_of(view) is not None,
            user_sql=self.user_sql,
            timings=self.timings,
            view_properties={CHOICE: choice},
            rebuild_because=reason,
        )

    def _chain(self, aux_sql: str, top_sql: str, choice: str, reason: str | None) -> Outcome:
        """The auxiliary state, then the model over it (`walk.walk`)."""
        return walk.walk(
            dataflow.with_auxiliary(aux_sql, top_sql, self.target, self.model),
            executor=self.executor,
            maintainer=self.maintainer,
            exists=lambda view: self.properties_of(view) is not None,
            user_sql=self.user_sql,
            timings=self.timings,
            view_properties={CHOICE: choice, AUX_SQL: aux_sql, TOP_SQL: top_sql},
            rebuild_because=reason,
        )

    def _unchanged_stages(self, props: dict[str, str], digest: SqlDigest) -> Outcome | None:
        """The run's outcome where the model's view records its states cut from this SQL
        (`digest`) and none of them can have changed (`unchanged.unchanged`); None: walk."""
        if (
            self.existing != "view"
            or self.full_refresh
            or self.views_changed is not None
            or not digest.accepts(props.get(unchanged.STAGED_SQL))
        ):
            return None
        count = int(props.get(STAGES, "0") or 0)
        targets = [*(self.target.sub_query(i) for i in range(count)), self.target]
        if not count or any(self.properties_of(t.view) is None for t in targets[:-1]):
            return None
        return unchanged.unchanged(targets, self.session, self.rows_read)

    def _drop_aux(self) -> None:
        """Remove the auxiliary state's view and state table (the model no longer uses them)."""
        drop_state(self.executor, self.target.auxiliary)

    def staged_dataflow(
        self, recorded: list[str] | None = None
    ) -> tuple[dataflow.Dataflow, list[str]]:
        """The model cut into its sub-query states, then itself (`dataflow.cut`), and its
        result columns' names (`recorded`: as a run with this SQL found them)."""
        probe = self.session()
        tree, names = walk.stage_tree(probe, self.compiled_sql, recorded)
        self.timings += probe.timings
        return dataflow.cut(tree, self.target, self.model), names

    def _staged(self, props: dict[str, str]) -> Outcome:
        """A model with sub-query states, innermost first (`walk.walk`); where none of
        them can have changed, said so from their metadata rows (`unchanged.py`)."""
        if AUX_SQL in props:
            self._drop_aux()
        digest = sql_hash(self.compiled_sql, self.top)
        quiet = self._unchanged_stages(props, digest)
        if quiet is not None:
            return replace(quiet, timings=self.timings + quiet.timings)
        flow, names = self.staged_dataflow(unchanged.recorded_outputs(props, digest))
        outcome = walk.walk(
            flow,
            executor=self.executor,
            maintainer=self.maintainer,
            exists=lambda view: self.properties_of(view) is not None,
            user_sql=self.user_sql,
            timings=self.timings,
            view_properties={
                STAGES: str(len(flow.sub_queries)),
                unchanged.STAGED_SQL: str(digest),
                unchanged.STAGED_OUTPUTS: json.dumps(names),
            },
        )
        drop_stages(self.executor, self.target, props, keep=len(flow.sub_queries))
        return outcome
