"""from_bases: a model's state rebuilt from the base tables, past earlier states that would
rebuild.

A model of several states (sub-query states, or an auxiliary state, then its own; `walk.py`)
maintains them in order. When `ivm_refresh` (`auto` by the estimates, or `full`) rebuilds an
earlier state E in place, the states after it would read E's overwrite as a change of their
input, and a model that keeps losing to rebuilds rebuilt every state in turn: q20 of TPC-H
four `INSERT OVERWRITE`s, 1.71 s, where its table's one statement took 0.62 s, since each
state holds more than the query needs (its `lineitem` state sums every part's line items;
the query's plan filters the parts first). So the walk stops at E (`RebuildDeferred`) and
rebuilds the model's own state in one statement in which E and every state after it are read
as the SELECT that computes their rows:

    rows(E) = initial_select(plan(E)) over the base tables at the pinned snapshots

which is what E's table would hold had it been rebuilt now, so the model's state equals a
rebuild through every state. E and the states after it are left as they were (each
consistent with its own watermarks), and the model's state records which base snapshots it
reflects past them (`detached` in its metadata row): until a run brings those states up to
date and rebuilds it in place from them (`refresh.DETACHED`), it is never refreshed, since
its watermarks of their tables are of tables it did not read. A run that rebuilds past them
again is as exact.

Example: TPC-H q20 keeps three sub-query states (the 'forest%' parts; the line items' sums by
part and supplier; the suppliers whose supply passes), then the model's over them. A round
whose change makes the first rebuild leaves all three and rebuilds the model's state in one
`INSERT OVERWRITE` reading `part`, `lineitem`, `partsupp`, `supplier` and `nation` at their
pinned snapshots (bench/results/2026-12-05-rebuild-past: 2.59 -> 1.65 s a rebuild).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler import render
from dbt.adapters.spark_ivm.compiler.operators.delta import TermRenderer
from dbt.adapters.spark_ivm.compiler.operators.family import operator_of
from dbt.adapters.spark_ivm.compiler.plan import Plan
from dbt.adapters.spark_ivm.compiler.runtime import facts
from dbt.adapters.spark_ivm.compiler.runtime.session import Head, Session

#: The metadata row a computed state's SELECT carries: never read (the later state reads a
#: state's data rows only, `render.view_select`), so it records nothing.
NO_META = "{}"


@dataclass(frozen=True)
class FromBases:
    """The earlier states a state is rebuilt past: each one's table as the SELECT computing
    its rows from the base tables (`computed`, by state table), the snapshots those SELECTs
    read (`pinned`: what the rebuilt state reflects past them), and why."""

    reason: str
    computed: dict[str, exp.Expression]
    pinned: dict[str, int | None]
    # The bases' heads when pinned and those read live: a live one that moves before the
    # rebuild's commit drops it (`facts.check_unmoved`).
    heads: dict[str, Head] = field(default_factory=dict)
    live: frozenset[str] = frozenset()


def past(session: Session, states: Sequence[tuple[str, Plan]], reason: str) -> FromBases:
    """The SELECTs computing `states` (state table and plan, in the order they are
    maintained: a later one may read an earlier one, then through its SELECT) from the base
    tables, pinned now."""
    skipped = {state for state, _ in states}
    read: dict[str, set[str]] = {}
    for _, plan in states:
        for relation, columns in plan.query.columns_read().items():
            if relation not in skipped:
                read.setdefault(relation, set()).update(columns)
    inputs = facts.pin(session, {r: sorted(c) for r, c in sorted(read.items())})
    pinned, live = inputs.snapshots, inputs.live
    computed: dict[str, exp.Expression] = {}
    for state, plan in states:
        versions = render.Versions(old={}, new=pinned, logs={}, live=live, computed=dict(computed))
        renderers = [TermRenderer(q, render.leaf_at(q, versions)) for q in plan.branch_queries]
        computed[state] = operator_of(plan).initial_select(plan, renderers, NO_META)
    return FromBases(reason, computed, pinned, inputs.heads, live)
