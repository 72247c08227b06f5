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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler import render
from dbt.adapters.spark_ivm.compiler.operators import state_merge, union, window
from dbt.adapters.spark_ivm.compiler.operators.delta import TermRenderer
from dbt.adapters.spark_ivm.compiler.operators.prepare import Names, Prepared, Run
from dbt.adapters.spark_ivm.compiler.optimize.pruning import KeyRange
from dbt.adapters.spark_ivm.compiler.plan import Plan, Shape

KeyRanges = Mapping[tuple[int, str], KeyRange]


class Operator(Protocol):
    """The rules of one operator family (see the module docstring)."""

    @property
    def name(self) -> str: ...

    def initial_select(
        self, plan: Plan, renderers: Sequence[TermRenderer], meta: str
    ) -> exp.Expression: ...

    def compacted_select(
        self, plan: Plan, renderers: Sequence[TermRenderer], ranges: Sequence[KeyRanges]
    ) -> exp.Select | None: ...

    def prepare(
        self,
        run: Run,
        names: Names,
        plan: Plan,
        renderer: TermRenderer,
        compacted: exp.Select,
        new_meta: str,
    ) -> Prepared: ...


@dataclass(frozen=True)
class _Keyed:
    name: str = "keyed"

    def initial_select(
        self, plan: Plan, renderers: Sequence[TermRenderer], meta: str
    ) -> exp.Expression:
        return render.initial_state_select(plan, renderers[0], meta)

    def compacted_select(
        self, plan: Plan, renderers: Sequence[TermRenderer], ranges: Sequence[KeyRanges]
    ) -> exp.Select | None:
        return render.compacted_delta_select(plan, renderers[0], ranges[0])

    def prepare(
        self,
        run: Run,
        names: Names,
        plan: Plan,
        renderer: TermRenderer,
        compacted: exp.Select,
        new_meta: str,
    ) -> Prepared:
        return state_merge.prepare(run, names, plan, renderer, compacted, new_meta)


@dataclass(frozen=True)
class _Windowed(_Keyed):
    name: str = "windowed"

    def initial_select(
        self, plan: Plan, renderers: Sequence[TermRenderer], meta: str
    ) -> exp.Expression:
        return window.initial_select(plan, renderers[0], meta)

    def prepare(
        self,
        run: Run,
        names: Names,
        plan: Plan,
        renderer: TermRenderer,
        compacted: exp.Select,
        new_meta: str,
    ) -> Prepared:
        return window.prepare(run, names, plan, renderer, compacted, new_meta)


@dataclass(frozen=True)
class _SetOperation(_Keyed):
    name: str = "set operation"

    def initial_select(
        self, plan: Plan, renderers: Sequence[TermRenderer], meta: str
    ) -> exp.Expression:
        return union.initial_select(plan, renderers, meta)

    def compacted_select(
        self, plan: Plan, renderers: Sequence[TermRenderer], ranges: Sequence[KeyRanges]
    ) -> exp.Select | None:
        return union.compacted_select(plan, renderers, ranges)


KEYED: Operator = _Keyed()
WINDOWED: Operator = _Windowed()
SET_OPERATION: Operator = _SetOperation()


def operator_of(plan: Plan) -> Operator:
    """The family that maintains the plan's state."""
    if plan.branches:
        return SET_OPERATION
    if plan.shape is Shape.WINDOW:
        return WINDOWED
    return KEYED
