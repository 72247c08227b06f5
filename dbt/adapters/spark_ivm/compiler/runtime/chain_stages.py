"""chain_stages: a model with sub-query states, maintained innermost first, then the model.

A sub-query in FROM or JOIN (or a CTE) that groups, aggregates or is DISTINCT, which is also
what EXISTS / IN tests and scalar sub-queries become, is cut out of the model into a state of
its own (`frontend/stages.py`), and the model reads that state's table instead. Each state
is a `Maintainer` of its own with its own watermarks, so a failure between two states'
commits leaves the later states at their old watermarks of the earlier states' tables, and
the next run reads those changes from there.
A state rebuilt in this run rebuilds every state after it: their watermarks are of a table
that was replaced.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler import render
from dbt.adapters.spark_ivm.compiler.frontend import stages
from dbt.adapters.spark_ivm.compiler.frontend.analyze import base_relations
from dbt.adapters.spark_ivm.compiler.runtime import facts
from dbt.adapters.spark_ivm.compiler.runtime.chain_states import STAGES, make_view
from dbt.adapters.spark_ivm.compiler.runtime.executor import Executor, describe_columns
from dbt.adapters.spark_ivm.compiler.runtime.logs import Handoff
from dbt.adapters.spark_ivm.compiler.runtime.outcome import Outcome
from dbt.adapters.spark_ivm.compiler.runtime.refresh import Maintainer
from dbt.adapters.spark_ivm.compiler.runtime.session import Session, Target
from dbt.adapters.spark_ivm.compiler.sql.templates import sql


def stage_tree(probe: Session, compiled_sql: str) -> exp.Query:
    """The model's SELECT ready to be cut into sub-query states (`stages.prepare`), its
    result columns named as Spark names the model's own SELECT's (an unaliased
    `(select count(*) ..)` is `scalarsubquery()`), not as the rewrite's."""
    default_db = probe.target.schema.lower()
    relations = base_relations(compiled_sql, default_db, probe.model)
    tree = stages.prepare(compiled_sql, probe.model, facts.base_facts(probe, relations), default_db)
    names = describe_columns(probe.fetch("describe query", f"DESCRIBE QUERY {compiled_sql}"))
    stages.name_outputs(tree, [name for name, _ in names])
    return tree


def run_stages(
    tree: exp.Query,
    *,
    target: Target,
    model: str,
    executor: Executor,
    maintainer: Callable[..., Maintainer],
    exists: Callable[[str], bool],
    user_sql: str,
    timings: list[tuple[str, float]],
) -> tuple[Outcome, int]:
    """Maintain each sub-query state of `tree` in turn, then the model over them; the
    model's outcome and the number of sub-query states. `maintainer` makes the `Maintainer`
    of one state (`ChainMaintainer.maintainer`); `exists` says whether a view exists."""
    default_db = target.schema.lower()
    handoff: dict[str, Handoff] = {}
    done: list[Maintainer] = []
    timings = list(timings)
    summaries: list[str] = []
    rebuilt: str | None = None
    try:
        while (sub := stages.innermost(tree)) is not None:
            index = len(done)
            stage_at = stages.stage_target(target, index)
            there = exists(stage_at.view)
            stage = maintainer(
                model=f"{model}__ivm_s{index}",
                compiled_sql=sql(sub.this),
                target=stage_at,
                existing="view" if there else None,
                keep_scratch=True,
                handoff=dict(handoff),
                rebuild_because=rebuilt,
            )
            done.append(stage)
            first = stage.run()
            make_view(executor, stage_at, first, there)
            if first.new_history:  # (rebuilt in place: readers read the overwrite)
                rebuilt = rebuilt or f"its sub-query state {stage_at.view} was rebuilt"
            elif stage.committed:
                handoff[stage_at.state] = Handoff(keys=stage.changed_keys)
            plan = stage.last_plan or stage.plan_state(default_db)
            stages.read_state(sub, render.view_select(plan, stage_at.state))
            timings += [(f"s{index} {label}", s) for label, s in first.timings]
            summaries.append(f"state {stage_at.view}: {first.summary}")
        top = maintainer(
            compiled_sql=sql(tree),
            user_sql=user_sql,
            view_properties={STAGES: str(len(done))},
            rebuild_because=rebuilt,
            handoff=handoff,
        )
        outcome = top.run()
    finally:
        for stage in done:
            stage.release_scratch()
    summary = "; ".join([outcome.summary, *summaries])
    return replace(outcome, summary=summary, timings=timings + outcome.timings), len(done)
