"""Spark's physical plans of the statements ivm models run, recorded for a test to read.

While `recording` is active (session method, dbt in this process), every statement the
plugin's executor runs that joins (a MERGE, an INSERT, a scratch relation's SELECT, a fetch)
is planned by Spark first (`EXPLAIN`, or the DataFrame's executed plan) and kept by the dbt
connection it ran on (`model.<project>.<name>`). The statements themselves still run as they
would: this observes the real Spark, it stands in for nothing.
"""

from __future__ import annotations

import re
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from dbt.adapters.spark_ivm import connection_executor

#: Physical operators of a join without an equi-join key: a product of its sides.
PRODUCTS = ("CartesianProduct", "BroadcastNestedLoopJoin")
#: Statements worth planning: those that can join.
_JOINING = "JOIN"


def products(plan: str) -> list[str]:
    """The product operators in a plan's text, one entry per occurrence."""
    return [op for line in plan.splitlines() for op in PRODUCTS if op in line]


#: Operators that pass their one child's rows on without joining or grouping them.
_PASS_THROUGH = (
    "Project", "Filter", "Exchange", "BroadcastExchange", "AQEShuffleRead", "ColumnarToRow",
    "InputAdapter", "WholeStageCodegen", "Sort ", "ShuffleQueryStage", "BroadcastQueryStage",
    "*(",
)  # fmt: skip
_ONE_ROW_AGGREGATE = (
    "HashAggregate(keys=[]",
    "ObjectHashAggregate(keys=[]",
    "SortAggregate(keys=[]",
)
_SCAN = re.compile(r"BatchScan (\S+?)\[")


def _tree(plan: str) -> list[tuple[int, str]]:
    """(depth, operator text) per line of a physical plan's tree."""
    nodes = []
    for line in plan.splitlines():
        marker = max(line.find("+- "), line.find(":- "))
        if marker >= 0 and not line[:marker].strip(" :"):
            nodes.append((marker // 3 + 1, line[marker + 3 :]))
        elif line.strip() and not line.startswith((" ", ":")):
            nodes.append((0, line.strip()))
    return nodes


def _children(nodes: list[tuple[int, str]], index: int) -> list[int]:
    depth = nodes[index][0]
    found = []
    for i in range(index + 1, len(nodes)):
        if nodes[i][0] <= depth:
            break
        if nodes[i][0] == depth + 1:
            found.append(i)
    return found


def _one_row(
    nodes: list[tuple[int, str]], index: int, one_row_state: Callable[[str], bool]
) -> bool:
    """Does the subtree at `index` give at most one row (two for a change): an ungrouped
    aggregate, a scan of a state table that holds one data row or of such a state's change
    log, under operators that pass rows through?"""
    while True:
        text = nodes[index][1]
        if text.startswith(_ONE_ROW_AGGREGATE):
            return True
        scan = _SCAN.match(text)
        if scan is not None:
            return scan.group(1).endswith("__ivm_state") and one_row_state(scan.group(1))
        if text.startswith("Scan ExistingRDD["):
            # A computed log: that of a state without group keys (`__ivm_k<i>`) is the
            # change of a one-row state, its old and its new row.
            return "__ivm_row__" in text and "__ivm_k" not in text
        children = _children(nodes, index)
        if len(children) != 1 or not text.startswith(_PASS_THROUGH):
            return False
        index = children[0]


def products_of_relations(plan: str, one_row_state: Callable[[str], bool]) -> list[str]:
    """The product operators of `plan` both of whose sides may hold more than one row (a
    nested loop join of one row, e.g. with an ungrouped aggregate's state, is no product of
    two relations).

    >>> plan = '''BroadcastNestedLoopJoin BuildRight, Inner
    ... :- Scan ExistingRDD[a#1]
    ... +- BroadcastExchange IdentityBroadcastMode
    ...    +- HashAggregate(keys=[], functions=[max(b#2)])
    ...       +- BatchScan spark_catalog.db.t[b#2]'''
    >>> products_of_relations(plan, lambda state: False)
    []
    >>> products_of_relations(plan.replace("keys=[]", "keys=[c#3]"), lambda state: False)
    ['BroadcastNestedLoopJoin']
    """
    nodes = _tree(plan)
    found = []
    for i, (_, text) in enumerate(nodes):
        op = next((op for op in PRODUCTS if text.startswith(op)), None)
        if op is None:
            continue
        if not any(_one_row(nodes, c, one_row_state) for c in _children(nodes, i)):
            found.append(op)
    return found


def plan_of_select(spark: Any, select: str) -> str:
    """The physical plan Spark chooses for `select` (planned, not run)."""
    return str(spark.sql(select)._jdf.queryExecution().executedPlan().toString())


def plan_of_statement(spark: Any, statement: str) -> str:
    return "\n".join(str(row[0]) for row in spark.sql(f"EXPLAIN {statement}").collect())


@contextmanager
def recording(spark: Any) -> Iterator[dict[str, list[tuple[str, str]]]]:
    """{connection name: [(statement, plan)]} for the statements run while active."""
    plans: dict[str, list[tuple[str, str]]] = defaultdict(list)
    lock = threading.Lock()
    executor = connection_executor.ConnectionExecutor
    methods = ("execute", "fetch", "scratch_view", "measured_scratch_view")
    original = {name: getattr(executor, name) for name in methods}

    def keep(self: Any, statement: str, plan: str) -> None:
        name = self.adapter.connections.get_thread_connection().name
        with lock:
            plans[name].append((statement, plan))

    def execute(self: Any, statement: str) -> None:
        head = statement.lstrip().upper()
        if _JOINING in head and head.startswith(
            ("MERGE", "INSERT", "CACHE TABLE", "CACHE LAZY", "CREATE")
        ):
            keep(self, statement, plan_of_statement(spark, statement))
        original["execute"](self, statement)

    def fetch(self: Any, statement: str) -> list[tuple]:
        head = statement.lstrip().upper()
        if _JOINING in head and head.startswith(("SELECT", "WITH")):
            keep(self, statement, plan_of_select(spark, statement))
        return original["fetch"](self, statement)

    def keep_scratch(self: Any, select: str, view_name: str) -> None:
        if _JOINING in select.upper():
            keep(self, f"-- scratch view {view_name}\n{select}", plan_of_select(spark, select))

    def scratch_view(self: Any, select: str, view_name: str, eager: bool = True) -> bool:
        keep_scratch(self, select, view_name)
        return original["scratch_view"](self, select, view_name, eager)

    def measured_scratch_view(
        self: Any, select: str, view_name: str, measures: Sequence[str]
    ) -> tuple | None:
        keep_scratch(self, select, view_name)
        return original["measured_scratch_view"](self, select, view_name, measures)

    executor.execute = execute  # type: ignore[method-assign]
    executor.fetch = fetch  # type: ignore[method-assign]
    executor.scratch_view = scratch_view  # type: ignore[method-assign]
    executor.measured_scratch_view = measured_scratch_view  # type: ignore[method-assign]
    try:
        yield plans
    finally:
        for name, method in original.items():
            setattr(executor, name, method)
