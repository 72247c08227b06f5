"""family: one interface over the operator families a state can be maintained by.

A state's plan (`plan.py`) is maintained by exactly one family, and the runtime asks it, never
the plan's shape, for the three things a run needs:

* `initial_select`: the state's rows (and its metadata row) from the inputs as they are;
* `compacted_select`: the change of the state's input rows, identical rows summed, zero
  weights dropped (None: no input changed);
* `prepare`: the scratch relations and the one MERGE that fold that change into the state.

Families:

* `KEYED`: a row per group or distinct row with its count (`__ivm_count__`) and aggregate
  helpers (joins, outer joins, semi joins, aggregates, bags; `state_merge.py`):
  state' = state + delta by key, rows at count 0 deleted, MIN/MAX groups recomputed;
* `WINDOWED`: a row per result row, partitions recomputed where the change touches them
  (`window.py`);
* `SET_OPERATION`: the branches' deltas summed into one keyed state (`union.py`), folded in
  as `KEYED` folds its delta.

>>> from dbt.adapters.spark_ivm.compiler.frontend.analyze import analyze
>>> from dbt.adapters.spark_ivm.compiler.plan import plan
>>> schemas = {"db.t": [("k", "int"), ("v", "int")]}
>>> q = analyze("select k, sum(v) as s from t group by k", "m", schemas, "db")
>>> operator_of(plan(q, [("k", "int"), ("s", "bigint")], ["int"])).name
'keyed'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler import render
from dbt.adapters.spark_ivm.compiler.ir import KeyRange
from dbt.adapters.spark_ivm.compiler.operators import state_merge, union, window
from dbt.adapters.spark_ivm.compiler.operators.delta import TermRenderer
from dbt.adapters.spark_ivm.compiler.operators.prepare import MetaRow, Names, Prepared, Run
from dbt.adapters.spark_ivm.compiler.plan import Plan, Shape

KeyRanges = Mapping[tuple[int, str], KeyRange]
InitialSelect = Callable[[Plan, Sequence[TermRenderer], str], exp.Expression]
CompactedSelect = Callable[[Plan, Sequence[TermRenderer], Sequence[KeyRanges]], exp.Select | None]
Prepare = Callable[[Run, Names, Plan, TermRenderer, exp.Select, MetaRow], Prepared]


@dataclass(frozen=True)
class Operator:
    """The rules of one operator family (see the module docstring), as data."""

    name: str
    # The state's rows from the inputs as they are: (plan, a renderer per branch, meta row).
    initial_select: InitialSelect
    # The change of the state's input rows: (plan, renderers, key ranges per branch).
    compacted_select: CompactedSelect
    # The scratch relations and the MERGE: (run, names, plan, first renderer, change, the
    # meta row given the state rows the MERGE writes).
    prepare: Prepare


def _one_branch_initial(plan: Plan, renderers: Sequence[TermRenderer], meta: str) -> exp.Expression:
    return render.initial_state_select(plan, renderers[0], meta)


def _window_initial(plan: Plan, renderers: Sequence[TermRenderer], meta: str) -> exp.Expression:
    return window.initial_select(plan, renderers[0], meta)


def _one_branch_compacted(
    plan: Plan, renderers: Sequence[TermRenderer], ranges: Sequence[KeyRanges]
) -> exp.Select | None:
    return render.compacted_delta_select(plan, renderers[0], ranges[0])


KEYED = Operator("keyed", _one_branch_initial, _one_branch_compacted, state_merge.prepare)
WINDOWED = Operator("windowed", _window_initial, _one_branch_compacted, window.prepare)
SET_OPERATION = Operator(
    "set operation", union.initial_select, union.compacted_select, state_merge.prepare
)


def operator_of(plan: Plan) -> Operator:
    """The family that maintains the plan's state."""
    if plan.branches:
        return SET_OPERATION
    if plan.shape is Shape.WINDOW:
        return WINDOWED
    return KEYED
