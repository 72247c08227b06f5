"""unchanged: a model with sub-query states found unchanged from its states' metadata rows.

A run of such a model first cuts its SQL into states (`walk.stage_tree`: a DESCRIBE QUERY and
the qualification of the whole SELECT), then asks each state in turn whether a base table
moved, planning the states its model's state reads past (`walk._plans_past`): 0.3-0.6 s of
Python and statements for a TPC-H query whose base tables did not change at all, where a flat
model answers in 0.1-0.2 s (bench/results/2026-12-06-refresh-once, no-change rounds). The
states' metadata rows and one read of the heads say it alone:

    unchanged  <=>  heads(inputs(M)) = recorded(M)
                    and ( M detached: heads(past(M)) = pinned(M)
                          else: for every state s, heads(inputs(s)) = recorded(s) )

where M is the model's own state, inputs(x) the relations x reads (base tables and earlier
states' tables) with the metadata file x recorded of each at its last commit, and past(M)
the base tables M read past its states when it was last rebuilt from them (`from_bases.py`),
pinned at the snapshots it recorded. That is the walk's own test, state by state
(`Maintainer.run`: no input's metadata file moved), without the cut: the cut depends only on
the model's SQL (the view records its digest, `STAGED_SQL`) and on its base tables' schemas,
which did not move either. A state left behind while M is detached keeps its changes for a
later run, as the walk would have left it.

Example: TPC-H q20 keeps three sub-query states; a run after a round that changed nothing
reads four metadata rows and the heads of its seven relations, and says
`no MERGE: no base table changed (...)`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence

from dbt.adapters.spark_ivm.compiler.relations import Target
from dbt.adapters.spark_ivm.compiler.runtime import facts
from dbt.adapters.spark_ivm.compiler.runtime.outcome import Mode, Outcome, StateRows
from dbt.adapters.spark_ivm.compiler.runtime.session import Head, Session
from dbt.adapters.spark_ivm.compiler.runtime.state_meta import SqlDigest, StateMeta

#: Model view properties: the digest of the model SQL its sub-query states were cut from (of
#: its canonical form, as a state's `refresh.sql_hash`: a reformatted SQL is the same), and
#: the names Spark gave that SQL's result columns (JSON), which the next cut of the same SQL
#: takes instead of a DESCRIBE QUERY (`walk.stage_tree`).
STAGED_SQL = "ivm.staged_sql"
STAGED_OUTPUTS = "ivm.staged_outputs"


def recorded_outputs(props: Mapping[str, str], digest: SqlDigest) -> list[str] | None:
    """The result column names the model's view records for the SQL of `digest` (None:
    none recorded, or for other SQL).

    >>> props = {STAGED_SQL: "ab", STAGED_OUTPUTS: '["k", "n"]'}
    >>> recorded_outputs(props, SqlDigest("ab", "x"))
    ['k', 'n']
    >>> recorded_outputs(props, SqlDigest("cd", "x")) is None
    True
    """
    if not digest.accepts(props.get(STAGED_SQL)):
        return None
    try:
        names = json.loads(props.get(STAGED_OUTPUTS) or "null")
    except ValueError:
        return None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return None
    return names


def unmoved(meta: StateMeta, heads: dict[str, Head]) -> bool:
    """Is every input of the state at the metadata file its last commit recorded?

    >>> from dbt.adapters.spark_ivm.compiler.runtime.state_meta import SqlDigest, StateMeta
    >>> meta = StateMeta.parse('{"watermarks": {"db.t": 7}, '
    ...                        '"bases": {"db.t": {"metadata": "v3.json"}}}', None)
    >>> unmoved(meta, {"db.t": Head("v3.json", 7)}), unmoved(meta, {"db.t": Head("v4.json", 8)})
    (True, False)
    """
    return all(meta.base(r).metadata == heads[r].metadata for r in meta.watermarks)


def all_unchanged(metas: Sequence[StateMeta], heads: dict[str, Head]) -> bool:
    """The module's equation over the states' rows, the model's own last.

    >>> from dbt.adapters.spark_ivm.compiler.runtime.state_meta import SqlDigest, StateMeta
    >>> s0 = StateMeta.parse('{"watermarks": {"db.b": 1}, '
    ...                      '"bases": {"db.b": {"metadata": "b1.json"}}}', None)
    >>> m = StateMeta.parse('{"watermarks": {"db.s0": 5}, '
    ...                     '"bases": {"db.s0": {"metadata": "s5.json"}}}', None)
    >>> now = {"db.b": Head("b1.json", 1), "db.s0": Head("s5.json", 5)}
    >>> all_unchanged([s0, m], now), all_unchanged([s0, m], {**now, "db.b": Head("b2.json", 2)})
    (True, False)

    Detached (rebuilt past s0 at `db.b`'s snapshot 2), s0 left behind at snapshot 1:

    >>> past = StateMeta.parse('{"watermarks": {"db.s0": 5}, "detached": {"db.b": 2}, '
    ...                        '"bases": {"db.s0": {"metadata": "s5.json"}}}', None)
    >>> all_unchanged([s0, past], {**now, "db.b": Head("b2.json", 2)})
    True
    >>> all_unchanged([s0, past], {**now, "db.b": Head("b3.json", 3)})
    False
    """
    *states, model = metas
    if not unmoved(model, heads):
        return False
    if model.detached:
        pinned = model.detached_at
        return pinned is not None and all(heads[r].snapshot == s for r, s in pinned.items())
    return all(not s.detached and unmoved(s, heads) for s in states)


def unchanged(
    targets: Sequence[Target],
    session_of: Callable[[Target], Session],
    rows_read: dict[str, facts.Found],
) -> Outcome | None:
    """The outcome of a run that finds nothing changed in any state of `targets` (the
    model's sub-query states innermost first, then the model's own), read through
    `session_of(target)`; None where a state may have changed, or its row cannot say. The
    model's row is read first and, where its own inputs moved (a run with a change mostly
    finds that), nothing more; every row read goes into `rows_read` by state table, for the
    walk that follows to use rather than read again."""
    sessions = {target.state: session_of(target) for target in targets}
    metas: dict[str, StateMeta] = {}
    heads: dict[str, Head] = {}

    def read(target: Target) -> StateMeta | None:
        session = sessions[target.state]
        found = rows_read[target.state] = facts.read_meta(session)
        meta = found.meta
        # A row and view that record different digests of the state's SQL: the walk decides.
        if meta is None or meta.sql_hash is None or meta.sql_hash != meta.view_sql_hash:
            return None
        metas[target.state] = meta
        wanted = sorted(({*meta.watermarks, *(meta.detached_at or {})}) - set(heads))
        heads.update(sessions[targets[-1].state].current_heads(wanted))
        return meta

    try:
        model = read(targets[-1])
        if model is None or not unmoved(model, heads):
            return None
        if not model.detached and any(read(t) is None for t in targets[:-1]):
            return None
    except Exception:  # noqa: BLE001 - a base gone or replaced: the walk names it
        return None
    states = [metas[t.state] for t in targets[:-1] if t.state in metas]  # (none: detached)
    if not all_unchanged([*states, model], heads):
        return None
    changes = ", ".join(f"{r}: 0 delta rows" for r in sorted(heads) if r not in sessions)
    return Outcome(
        mode=Mode.REFRESH,
        reason="incremental",
        main_sql=None,
        summary=f"no MERGE: no base table changed ({changes})",
        timings=[t for session in sessions.values() for t in session.timings],
        rows=StateRows(),
    )
