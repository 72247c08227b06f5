"""The delta SELECT the compiler renders for a query, without Spark: for golden-SQL tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler import render
from dbt.adapters.spark_ivm.compiler.frontend.analyze import analyze
from dbt.adapters.spark_ivm.compiler.operators.delta import TermRenderer
from dbt.adapters.spark_ivm.compiler.optimize.pruning import KeyRange
from dbt.adapters.spark_ivm.compiler.plan import Plan, plan


def planned(
    text: str,
    schemas: Mapping[str, Sequence[tuple[str, str]]],
    default_db: str = "s",
) -> Plan:
    """The plan of `text` over tables of `schemas`, result columns typed `string`."""
    q = analyze(text, "m", schemas, default_db)
    outputs = [(f"c{n}", "string") for n in range(len(q.outputs))]
    return plan(q, outputs, [None] * len(q.aggregates))


def renderer_for(
    p: Plan, changed: set[str], schemas: Mapping[str, Sequence[tuple[str, str]]], default_db="s"
) -> TermRenderer:
    """The term renderer of `p` when the tables `changed` (names in `default_db`, or whole
    relation names where they hold a dot) have change logs `log_<name>`."""
    versions = render.Versions(
        old={r: 1 for r in schemas},
        new={r: 2 for r in schemas},
        logs={
            (name if "." in name else f"{default_db}.{name}"): f"log_{name.replace('.', '_')}"
            for name in changed
        },
    )
    return TermRenderer(p.query, render.leaf_at(p.query, versions), versions.changed(p.query))


def delta_select(
    text: str,
    schemas: Mapping[str, Sequence[tuple[str, str]]],
    changed: set[str],
    ranges: Mapping[tuple[int, str], KeyRange] | None = None,
    default_db: str = "s",
) -> exp.Select:
    """The compacted delta of `text` when the tables `changed` (names in `default_db`) have
    change logs `log_<name>`: every input at version 1 (old) or 2 (new)."""
    p = planned(text, schemas, default_db)
    select = render.compacted_delta_select(p, renderer_for(p, changed, schemas, default_db), ranges)
    assert select is not None
    return select
