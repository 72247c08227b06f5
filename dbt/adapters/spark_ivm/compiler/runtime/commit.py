"""commit: the one commit of a refresh, and what follows it.

Before the commit: the delta table (per state key: the change and the stored counts it
meets), the groups whose MIN/MAX must be recomputed, and the MERGE that folds both into the
state table together with the metadata row's new watermarks (`state_merge.merge_sql`; a
window model swaps its affected partitions instead, `window.py`). After it: the entry of the
delta log its readers take (`capture/delta_log.py`) and the state's upkeep (`upkeep.py`); a
failure there never undoes the committed refresh.

`FAIL_ENV` names a step after which a test makes the refresh fail (`STEPS`), to show that
a failure between any two statements leaves the previous state and the next run exact.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler import render
from dbt.adapters.spark_ivm.compiler.capture import delta_log, weights
from dbt.adapters.spark_ivm.compiler.errors import InjectedFailure
from dbt.adapters.spark_ivm.compiler.operators import state_merge, window
from dbt.adapters.spark_ivm.compiler.operators.delta import TermRenderer
from dbt.adapters.spark_ivm.compiler.plan import Plan
from dbt.adapters.spark_ivm.compiler.runtime import upkeep
from dbt.adapters.spark_ivm.compiler.runtime.executor import MetadataReader
from dbt.adapters.spark_ivm.compiler.runtime.session import Session

FAIL_ENV = "DBT_SPARK_IVM_FAIL_AFTER"
STEPS = ("capture", "logs", "delta", "recompute", "commit")


def checkpoint(model: str, step: str) -> None:
    """Fail here when a test asks for it (`FAIL_ENV`)."""
    if os.environ.get(FAIL_ENV) == step:
        raise InjectedFailure(f"ivm model '{model}': injected failure after step {step}")


@dataclass(frozen=True)
class Prepared:
    """A refresh's commit, ready: the MERGE (None: no state row changes), where the changed
    state keys are (delta table, key columns: an auxiliary state hands them to the model,
    `chain.py`), and what the MERGE does (state rows inserted, updated, deleted, groups
    recomputed; or window partitions recomputed into rows)."""

    commit: str | None
    changed_keys: tuple[str, list[str]]
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    recomputed: int = 0
    partitions: int = 0
    partition_rows: int = 0


def delta_commit(
    session: Session, the_plan: Plan, renderer: TermRenderer, compacted: exp.Select, new_meta: str
) -> Prepared:
    """The delta table, the recomputed groups and the MERGE that folds them in."""
    target = session.target
    delta = target.delta
    select = state_merge.delta_table_select(the_plan, compacted, target.state)
    session.compute_scratch("delta", delta, select)
    keys = (delta, list(the_plan.key_columns))
    stats = session.fetch("stats", state_merge.stats_sql(delta))[0]
    inserted, updated, deleted, recomputed = (int(x or 0) for x in stats)
    checkpoint(session.model, "delta")
    if not (inserted or updated or deleted):
        return Prepared(None, keys, recomputed=recomputed)
    recomputed_table = None
    if recomputed:
        recomputed_table = target.recomputed
        select = render.recompute_select(the_plan, renderer, delta)
        session.compute_scratch("recompute", recomputed_table, select)
    checkpoint(session.model, "recompute")
    commit = state_merge.merge_sql(
        the_plan, target.state, delta, recomputed_table, new_meta, session.state_types()
    )
    return Prepared(commit, keys, inserted, updated, deleted, recomputed)


def window_commit(
    session: Session, the_plan: Plan, renderer: TermRenderer, compacted: exp.Select, new_meta: str
) -> Prepared:
    """The affected partitions, their recomputed rows and the MERGE that swaps them in
    (`window.py`); no MERGE when no change reaches a window's input."""
    target = session.target
    affected = target.delta
    session.compute_scratch("delta", affected, window.affected_select(the_plan, compacted))
    keys = (affected, list(the_plan.key_columns))
    checkpoint(session.model, "delta")
    recomputed = target.recomputed
    select = window.recompute_select(the_plan, renderer, affected)
    session.compute_scratch("recompute", recomputed, select)
    stats = session.fetch("stats", window.stats_sql(affected, recomputed))[0]
    partitions, rows = (int(x or 0) for x in stats)
    checkpoint(session.model, "recompute")
    if not partitions:
        return Prepared(None, keys)
    types = session.state_types()
    commit = window.merge_sql(the_plan, target.state, affected, recomputed, new_meta, types)
    return Prepared(commit, keys, partitions=partitions, partition_rows=rows)


def publish(session: Session, before: int | None, keys: tuple[str, list[str]] | None) -> None:
    """Append this commit's entry to the delta log (`capture/delta_log.py`); `keys`: where
    the state keys it changed are (None: no data row changed). The refresh is committed
    already: a failure here only logs, and readers then take the version diff of the state
    for this commit."""
    state = session.target.state
    try:
        after = session.current_heads([state])[state].snapshot
        if before is None or after is None or after == before:
            raise RuntimeError(f"no commit of {state} between snapshots {before} and {after}")
        types = session.state_types()
        columns = list(types)
        exact = weights.exact_columns(types.items())
        append = delta_log.append_sql(state, columns, before, after, keys, exact)
        try:
            session.run("delta log", append)
        except Exception:  # noqa: BLE001 - no log yet (a reader was added): start one
            for statement in [*delta_log.create_sql(state), append]:
                session.run("delta log", statement)
    except Exception as e:  # noqa: BLE001 - must not fail a committed refresh
        session.warn(
            f"ivm model '{session.model}': its delta log {delta_log.log_of(state)} "
            "misses this refresh; the models that read it take the version diff of "
            f"{state} instead: {' '.join(str(e).split())[:300]}"
        )


def keep_up(session: Session, published: bool) -> None:
    """After the commit: compact the state table and expire its old snapshots when due
    (`upkeep.py`; and the delta log's old entries where it keeps one, `published`). The
    refresh is committed already, so a failure here only logs: the run succeeds and the
    next refresh tries again."""
    state = session.target.state
    try:
        if isinstance(session.executor, MetadataReader):
            reader = session.executor
            totals = session.timed("upkeep", lambda: reader.iceberg_snapshot_totals(state))
            if totals is not None and not upkeep.may_be_due(upkeep.from_summary(*totals)):
                return
        stats = upkeep.parse_stats(session.fetch("upkeep", upkeep.stats_sql(state))[0])
        for label, statement in upkeep.statements(state, stats):
            session.run(label, statement)
        if published and upkeep.needs_expiry(stats):
            assert stats.committed_at is not None
            for statement in delta_log.trim_sqls(state, stats.committed_at):
                session.run("expire", statement)
    except Exception as e:  # noqa: BLE001 - upkeep must not fail a committed refresh
        session.warn(
            f"ivm model '{session.model}': upkeep of {state} failed, the refresh "
            f"is committed and the next one retries: {' '.join(str(e).split())[:300]}"
        )
