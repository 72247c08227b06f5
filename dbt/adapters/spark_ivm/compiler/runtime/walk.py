"""walk: a model's dataflow run state by state, the model's own state last.

The states are a model's sub-query states innermost first, or its auxiliary state, then
the model's own; a flat model is its own state alone (`dataflow.py`, `chain.py` decides
which). Each state is a `Maintainer` of its own with its own watermarks, so a failure
between two states' commits leaves the later states at their old watermarks of the earlier
states' tables, and the next run reads those changes from there. A state's refresh hands the
keys it changed to the later states (`Handoff`); a state rebuilt in this run rebuilds every
state after it: their watermarks are of a table that was replaced. An earlier state that its
policy would rebuild in place stops the walk: it and the states after it are left as they
were, and the model's state is rebuilt past them from the base tables (`from_bases.py`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler import dataflow, render
from dbt.adapters.spark_ivm.compiler.frontend import stages
from dbt.adapters.spark_ivm.compiler.frontend.analyze import base_relations
from dbt.adapters.spark_ivm.compiler.plan import Plan
from dbt.adapters.spark_ivm.compiler.runtime import facts, from_bases
from dbt.adapters.spark_ivm.compiler.runtime.chain_states import make_view
from dbt.adapters.spark_ivm.compiler.runtime.executor import Executor, describe_columns
from dbt.adapters.spark_ivm.compiler.runtime.logs import Handoff
from dbt.adapters.spark_ivm.compiler.runtime.outcome import Outcome, RebuildDeferred
from dbt.adapters.spark_ivm.compiler.runtime.refresh import Maintainer
from dbt.adapters.spark_ivm.compiler.runtime.session import Session


def stage_tree(
    probe: Session, compiled_sql: str, recorded: list[str] | None = None
) -> tuple[exp.Query, list[str]]:
    """The model's SELECT ready to be cut into sub-query states (`stages.prepare`,
    `dataflow.cut`), its result columns named as Spark names the model's own SELECT's (an
    unaliased `(select count(*) ..)` is `scalarsubquery()`), not as the rewrite's; and those
    names. `recorded`: the names a DESCRIBE QUERY of this SQL gave before (the model's view
    keeps them, `unchanged.STAGED_OUTPUTS`), taken where the text alone names the columns."""
    default_db = probe.target.schema.lower()
    relations = base_relations(compiled_sql, default_db, probe.model)
    tree = stages.prepare(compiled_sql, probe.model, facts.base_facts(probe, relations), default_db)
    names = recorded if recorded is not None and stages.named_by_text(compiled_sql) else None
    if names is None:
        described = probe.fetch("describe query", f"DESCRIBE QUERY {compiled_sql}")
        names = [name for name, _ in describe_columns(described)]
    stages.name_outputs(tree, names)
    return tree, names


@dataclass(frozen=True)
class Deferred:
    """The earlier state at `index` whose rebuild in place the model's state takes over."""

    index: int
    state: Maintainer
    reason: str


def _detached_reader(
    maintainer: Callable[..., Maintainer], there: Callable[[], bool]
) -> Callable[[], dict[str, int | None] | None]:
    """What reads, once and only when asked, the snapshots the model's state read past its
    earlier states (None: not rebuilt so, or no state)."""

    @functools.cache
    def read() -> dict[str, int | None] | None:
        meta = maintainer().read_meta() if there() else None
        return meta.detached_at if meta is not None else None

    return read


def _plans_past(
    flow: dataflow.Dataflow,
    deferred: Deferred,
    views: dict[int, str],
    maintainer: Callable[..., Maintainer],
    default_db: str,
    timings: list[tuple[str, float]],
) -> list[tuple[str, Plan]]:
    """The plans of the deferred state and of every earlier state after it (not run: each is
    planned over the tables of the ones before it, as they are, `Maintainer.plan_unrun`), by
    state table; `views` gets their view SELECTs, which the later states' SQL reads them
    through, and `timings` the statements planning them took."""
    found: list[tuple[str, Plan]] = []
    for index in range(deferred.index, len(flow.states) - 1):
        node = flow.states[index]
        if index == deferred.index:
            plan = deferred.state.last_plan or deferred.state.plan_state(default_db)
        else:
            planner = maintainer(
                model=node.name,
                compiled_sql=node.sql(views),
                target=node.target,
                existing="view",
            )
            plan = planner.plan_unrun(default_db)
            tag = node.role.tag(index)
            timings += [(f"{tag} {step}", s) for step, s in planner.session.timings]
        views[index] = render.view_select(plan, node.target.state)
        found.append((node.target.state, plan))
    return found


def walk(
    flow: dataflow.Dataflow,
    *,
    executor: Executor,
    maintainer: Callable[..., Maintainer],
    exists: Callable[[str], bool],
    user_sql: str,
    timings: list[tuple[str, float]],
    view_properties: dict[str, str],
    rebuild_because: str | None = None,
) -> Outcome:
    """Maintain the states of `flow` in order, the model's last; the model's outcome.
    `maintainer` makes the `Maintainer` of one state (`ChainMaintainer.maintainer`),
    `exists` says whether a view exists; `view_properties` go on the model's view, and
    `rebuild_because` rebuilds the model (a changed choice of states)."""
    default_db = flow.top.target.schema.lower()
    waited = {i for node in flow.states for i in node.placeholders()}
    handoff: dict[str, Handoff] = {}
    done: list[Maintainer] = []
    views: dict[int, str] = {}  # the view SELECT of each state a later one waits for
    timings = list(timings)
    summaries: list[str] = []
    rebuilt: str | None = None
    deferred: Deferred | None = None
    detached_at = _detached_reader(maintainer, lambda: exists(flow.top.target.view))
    try:
        for index, node in enumerate(flow.states[:-1]):
            there = exists(node.target.view)
            state = maintainer(
                model=node.name,
                compiled_sql=node.sql(views),
                target=node.target,
                existing="view" if there else None,
                keep_scratch=True,
                handoff=dict(handoff),
                rebuild_because=rebuilt,
                defer_rebuild=True,
                defer_since=detached_at,
            )
            done.append(state)
            try:
                first = state.run()
            except RebuildDeferred as why:
                deferred = Deferred(index, state, why.reason)
                label = node.role.tag(index)
                timings += [(f"{label} {step}", s) for step, s in state.session.timings]
                break
            make_view(executor, node.target, first, there)
            if first.new_history:  # (rebuilt in place: readers read the overwrite)
                rebuilt = rebuilt or f"its {node.role.value} {node.target.view} was rebuilt"
            elif state.committed:
                # Its change reaches the later states in this run as the keys it changed,
                # read so only where its commit is the one change since their watermark of
                # its state (`Handoff.covers`).
                handoff[node.target.state] = Handoff(keys=state.changed_keys)
            if index in waited:
                plan = state.last_plan or state.plan_state(default_db)
                views[index] = render.view_select(plan, node.target.state)
            label = node.role.tag(index)
            timings += [(f"{label} {step}", s) for step, s in first.timings]
            summaries.append(f"{node.role.in_summary} {node.target.view}: {first.summary}")
        skipped: list[tuple[str, Plan]] = []
        if deferred is not None:
            skipped = _plans_past(flow, deferred, views, maintainer, default_db, timings)
            for node in flow.states[deferred.index : -1]:
                summaries.append(
                    f"{node.role.in_summary} {node.target.view}: left as it was (the model's "
                    "state reads past it, from the base tables)"
                )
        top = maintainer(
            compiled_sql=flow.top.sql(views),
            user_sql=user_sql,
            view_properties=view_properties,
            rebuild_because=rebuild_because or rebuilt,
            handoff=handoff,
        )
        if deferred is not None:
            node = flow.states[deferred.index]
            why = (
                f"its {node.role.value} {node.target.view} would be rebuilt ({deferred.reason}); "
                "rebuilt from the base tables past it"
            )
            # Past every earlier state, a bag model may read its own SQL (`whole_bag`).
            whole = user_sql if deferred.index == 0 else None
            top.past = from_bases.past(top.session, skipped, why, whole)
        outcome = top.run()
    finally:
        for state in done:
            state.release_scratch()
    summary = "; ".join([outcome.summary, *summaries])
    return replace(outcome, summary=summary, timings=timings + outcome.timings)
