"""build: a state's table written from nothing (a first run, changed SQL, `--full-refresh`,
a base event).

Over an existing model the new state replaces the old one in one Iceberg commit (`CREATE OR
REPLACE TABLE .. AS`, `state_table.replace_state_sql`): the model's view shows the old rows until
then, a build that fails before it leaves them, and the view is dropped and created only where
the new one differs (`view.ViewStatement`). A rebuild in place (`INSERT OVERWRITE`, chosen by
`ivm_refresh`) is the other one-commit rebuild, for a state whose columns stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace as with_fields
from typing import NamedTuple

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler import render
from dbt.adapters.spark_ivm.compiler.capture import delta_log
from dbt.adapters.spark_ivm.compiler.errors import BaseRelationError, IvmError
from dbt.adapters.spark_ivm.compiler.operators.delta import TermRenderer
from dbt.adapters.spark_ivm.compiler.operators.family import operator_of
from dbt.adapters.spark_ivm.compiler.plan import Plan
from dbt.adapters.spark_ivm.compiler.runtime import (
    base_tables,
    commit,
    cost,
    facts,
    from_bases,
    run_history,
    view,
)
from dbt.adapters.spark_ivm.compiler.runtime.failpoints import REBUILD_STEP, REPLACED_STEP
from dbt.adapters.spark_ivm.compiler.runtime.from_bases import FromBases
from dbt.adapters.spark_ivm.compiler.runtime.outcome import Mode, Outcome, StateRows
from dbt.adapters.spark_ivm.compiler.runtime.session import Session
from dbt.adapters.spark_ivm.compiler.sql import state_table
from dbt.adapters.spark_ivm.compiler.sql.layout import Layout

#: The metadata row a build commits, given the snapshots it pinned, what it trusts of each
#: base (`base_tables.fingerprint`) and its run's record (`state_meta.written`).
BuildMeta = Callable[
    [dict[str, int | None], dict[str, base_tables.BaseRecord], run_history.Run], str
]


def partition_columns(plan: Plan, layout: Layout, model: str) -> list[str]:
    """The state columns the model's `partition_by` names, by the result columns they hold;
    a column the state does not hold as it is, an error naming the ones it does."""
    out = []
    for wanted in layout.partition_columns:
        found = plan.state_column_of(wanted)
        if found is None:
            held = [n for n in plan.output_names if plan.state_column_of(n)]
            raise IvmError(
                f"ivm model '{model}': partition_by names {wanted!r}, which its state does not "
                f"hold as a column; it can partition by {', '.join(held) or 'none of them'} "
                "(result columns kept as they are: group keys, distinct or plain columns)"
            )
        out.append(found)
    return out


def refused_replace(error: Exception) -> bool:
    """Did the metastore refuse `CREATE OR REPLACE TABLE` of a state for its new columns
    (Hive: "types incompatible with the existing columns"; Iceberg then cannot tell whether
    its commit happened)?

    >>> refused_replace(RuntimeError("InvalidOperationException: The following columns have "
    ...     "types incompatible with the existing columns in their respective positions"))
    True
    >>> refused_replace(RuntimeError("Table or view not found"))
    False
    """
    text = str(error)
    return "incompatible with the existing columns" in text or "CommitStateUnknown" in text


def create_state(
    session: Session, plan: Plan, select: exp.Expression, replace: bool, publish: bool
) -> None:
    """Create the state table of a build (and its delta log, when published). Over an
    existing model the new state replaces the old one in one commit, so its view shows
    the old rows until then and a build that fails leaves them; a metastore that refuses
    the replace (a column changing type in place) has the old state dropped first."""
    state = session.target.state
    layout = session.layout
    partitions = partition_columns(plan, layout, session.model)
    replaced = False
    if replace:
        session.checkpoint(REBUILD_STEP)
        statement = state_table.replace_state_sql(state, select, layout, partitions)
        try:
            session.run("build state", statement)
            replaced = True
        except Exception as e:
            if not refused_replace(e):
                raise
            session.warn(
                f"ivm model '{session.model}': the metastore refused to replace {state} "
                f"({str(e).splitlines()[0][:200]}); dropping it and building a new one "
                "(the view is unreadable until the build is done)"
            )
    if not replaced:
        for statement in state_table.create_state_sql(state, select, layout, partitions):
            session.run("build state", statement)
    if publish:
        for statement in delta_log.create_sql(state, layout.unpartitioned()):
            session.run("delta log", statement)


def _whole(
    session: Session,
    plan: Plan,
    meta: str,
    pinned: dict[str, int | None],
    live: frozenset[str],
    past: FromBases | None,
) -> exp.Expression | None:
    """A bag model rebuilt past every earlier state: its state from its own SQL
    (`from_bases.whole_bag`), where every base it reads was pinned once (None: the
    states' SELECTs, `past.computed`, compute it)."""
    if past is None or past.model_sql is None or live or past.live:
        return None
    if any(past.pinned.get(r, s) != s for r, s in pinned.items()):
        return None  # a base committed to between the two pins: each part reads its own
    snapshots = {**past.pinned, **pinned}
    default_db = session.target.schema.lower()
    rows = from_bases.whole_bag(plan, past.model_sql, default_db, snapshots)
    return None if rows is None else state_table.with_meta_row(rows, meta, plan.state_columns)


class Written(NamedTuple):
    """A state written: its data rows, and whether they were computed by the model's own SQL
    (`from_bases.whole_bag`) rather than by its plan."""

    rows: int
    own_sql: bool


def write_state(
    session: Session,
    plan: Plan,
    meta_row: BuildMeta,
    run: run_history.Run,
    *,
    in_place: bool,
    replace: bool,
    publish: bool,
    past: FromBases | None = None,
) -> Written:
    """Write the state from its inputs as they are now, pinned first.

    In place (`INSERT OVERWRITE`) or as a new table replacing any old one (`create_state`):
    one commit either way. A base read live that got a commit meanwhile drops the new
    state (its rows may hold a later commit than its watermarks say). `past`: earlier
    states read as the SELECTs computing them from the base tables (`from_bases.py`)."""
    inputs = facts.pin(session, plan.query.columns_read())
    session.checkpoint("capture")
    heads, bases, pinned, live = inputs.heads, inputs.bases, inputs.snapshots, inputs.live
    state = session.target.state
    computed = past.computed if past is not None else {}
    versions = render.Versions(old={}, new=pinned, logs={}, live=live, computed=computed)
    recorded = with_fields(
        run, inputs=cost.input_bytes(bases), snapshots=run_history.reflecting(pinned)
    )
    meta = meta_row(pinned, bases, recorded)
    select = _whole(session, plan, meta, pinned, live, past)
    own_sql = select is not None
    if select is None:
        renderers = [TermRenderer(q, render.leaf_at(q, versions)) for q in plan.branch_queries]
        select = operator_of(plan).initial_select(plan, renderers, meta)
    if in_place:
        # One commit: readers see the old rows until it, and a reader of this model's
        # delta log finds a commit with no entry and reads the version diff instead.
        session.checkpoint(REBUILD_STEP)
        session.run("build state", state_table.overwrite_state_sql(state, select))
    else:
        create_state(session, plan, select, replace=replace, publish=publish)
    try:
        facts.check_unmoved(session, heads, live)
        if past is not None:
            facts.check_unmoved(session, past.heads, past.live)
    except BaseRelationError:
        session.run("build state", state_table.drop_state_sql(state))
        raise
    return Written(session.state_rows(), own_sql)


def build(
    session: Session,
    plan: Plan,
    meta_row: BuildMeta,
    reason: str,
    run: run_history.Run,
    *,
    in_place: bool,
    existing: str | None,
    publish: bool,
    past: FromBases | None,
    new_view: Callable[[], view.ViewStatement],
) -> Outcome:
    """Build the state (`write_state`) and, but in place, the model's view over it where the
    one there is not it (`new_view`); `existing` is what the relation is now (None, "view",
    "table"), `run` the run's record."""
    how = "rebuild in place" if in_place else "full build"
    session.log(f"ivm model '{session.model}': {how} ({reason})")
    state = write_state(
        session,
        plan,
        meta_row,
        run,
        in_place=in_place,
        replace=existing == "view",
        publish=publish,
        past=past,
    )
    if in_place or existing == "view":
        # The old state's snapshots stay until expired: a model rebuilt on every run
        # (`ivm_refresh`, a change rewriting most of its inputs) kept all of them.
        commit.keep_up(session, publish)
    # In place the view is the one there (same SQL, same state table), and kept.
    keeps_view = False
    main_sql: str | None = None
    if not in_place:
        made = new_view()
        keeps_view = existing == "view" and made.is_there(_view_properties(session))
        if not keeps_view:
            main_sql = made.sql
        session.checkpoint(REPLACED_STEP)
    return Outcome(
        mode=Mode.BUILD,
        reason=reason,
        main_sql=main_sql,
        summary=f"{'rebuilt in place' if in_place else 'built'} ({reason}): "
        f"{state.rows} state rows{', computed by its own SQL' if state.own_sql else ''}",
        timings=session.timings,
        rows=StateRows(inserted=state.rows),
        in_place=in_place,
        keeps_view=keeps_view,
    )


def _view_properties(session: Session) -> dict[str, str] | None:
    """The properties of the model's view now (None: none readable)."""
    try:
        return session.properties(session.target.view)
    except Exception:  # noqa: BLE001 - no view to keep: the build creates one
        return None
