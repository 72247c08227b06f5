"""choice: refresh or rebuild, for one run of one state, and what the run records.

`cost.py` holds the estimates and the policy, pure; this is the run's side of it: the state's
history read (once a base changed), the choice made before any data is read (`choose`, which
raises `Rebuild` in place where the policy or the estimates say so, and arms the refresh's
later choice between recomputing MIN/MAX value lists and rebuilding, `recompute_cost.py`),
and the start a rebuild records (`rebuild_started`). `refresh.Maintainer` calls them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

from dbt.adapters.spark_ivm.compiler.runtime import base_tables, cost, recompute_cost, run_history
from dbt.adapters.spark_ivm.compiler.runtime.base_tables import BaseRecord
from dbt.adapters.spark_ivm.compiler.runtime.outcome import Rebuild
from dbt.adapters.spark_ivm.compiler.runtime.session import Head, Session
from dbt.adapters.spark_ivm.compiler.runtime.state_meta import StateMeta


def now_ms() -> int:
    return int(time.time() * 1000)


def history(session: Session, meta: StateMeta) -> list[run_history.Run]:
    """The state's recorded runs, the last one timed by the state's last commit and, a
    build, counted by the state's rows where the JVM reads them without a Spark job (read
    only when a base changed: a run that finds no change reads one head per base)."""
    state = session.target.state
    try:
        committed = session.current_heads([state])[state].updated_ms
    except Exception:  # noqa: BLE001 - the refresh finds out what is wrong with the state
        committed = None
    return run_history.as_read(meta.recorded, committed, session.summary_rows)


def rebuild_started(started_ms: int, chose_ms: int | None, rebuilt_ms: int) -> int:
    """When a run's rebuild started, as its record says: the run's start, but for a rebuild
    that a refresh turned into after its capture and delta (`Session.may_recompute`), whose
    time up to the choice to refresh counts (a rebuild chosen up front reads the same) and not
    the capture and delta it threw away, so that the next estimate of a rebuild is of a
    rebuild (at SF 10, 1 %: 4-14 s of a 25-55 s run).

    >>> rebuild_started(1_000, None, 9_000), rebuild_started(1_000, 1_500, 9_000)
    (1000, 8500)
    """
    if chose_ms is None:
        return started_ms
    return started_ms + max(0, rebuilt_ms - chose_ms)


def choose(
    session: Session,
    policy: cost.Policy,
    runs: list[run_history.Run],
    started_ms: int,
    meta: StateMeta,
    heads: dict[str, Head],
    metadata: dict[str, base_tables.TableMetadata],
    bases: dict[str, BaseRecord],
    since: Callable[[], dict[str, int | None] | None] | None = None,
) -> run_history.Run:
    """The record of a run that refreshes; `Rebuild` (in place) where the policy or the
    estimates say rebuild (`cost.py`). Reads nothing: the changed inputs' metadata is read
    already. A refresh leaves the session the rule that turns a recompute of MIN/MAX value
    lists costing more than the rebuild into one (`recompute_cost.py`).

    `since`: for an earlier state of a model, reads the snapshots the model's state read past
    it when it was last rebuilt so (None: it was not; `from_bases.py`), asked only of a
    rebuild. The state is behind them, so its own change is larger than the model's; the
    rebuild is left to the model's state (deferrable) only where the change since them would
    be rebuilt too or is none, else the state catches up, by a rebuild if need be."""
    heads_now = {r: h.snapshot for r, h in heads.items()}
    reflected = run_history.reflecting(heads_now)
    changes = cost.changes(metadata, meta.watermarks, heads_now)
    if changes is None:
        return run_history.Run(run_history.REFRESH, started_ms, None, snapshots=reflected)
    inputs = cost.input_bytes(bases)
    choice = cost.weigh(policy, runs, changes, inputs)
    if choice.rebuild:
        deferrable = not choice.exploring
        past = since() if deferrable and since is not None else None
        if past is not None:
            marks = {**meta.watermarks, **{r: s for r, s in past.items() if r in heads_now}}
            latest = cost.changes(metadata, marks, heads_now)
            # Nothing since: the model's state is as new as it, and stays (`refresh.py`). A
            # state that defers never times a rebuild of its own, so a choice made to time
            # one does not count as one.
            again = cost.weigh(policy, runs, latest, inputs) if latest is not None else None
            deferrable = latest is not None and (
                not any(c.bytes for c in latest)
                or (again is not None and again.rebuild and not again.exploring)
            )
        raise Rebuild(choice.why, in_place=True, deferrable=deferrable)
    if policy is cost.Policy.AUTO and choice.guess and choice.guess.rebuild is not None:
        session.log(f"ivm model '{session.model}': refresh: {choice.why}")
    rebuild = choice.guess.rebuild if choice.guess else None
    session.recompute_instead = partial(recompute_cost.weigh, policy, rebuild)
    size = sum(c.bytes for c in changes)
    return run_history.Run(run_history.REFRESH, started_ms, None, size, inputs, snapshots=reflected)
