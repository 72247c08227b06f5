"""explain_lines: a planned state and its runs in words, as `ivm_explain` prints them (pure).

`explain.py` reads a model's relations and walks its dataflow; the wording of what it finds,
which needs no Spark, is here: the operators of a state's plan (`plan_lines`: the inputs, each
join and the rule that maintains it, the operator and each aggregate's rule with its equation,
the key pruning) and the runs its state recorded (`run_lines`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler import dataflow
from dbt.adapters.spark_ivm.compiler.ir import JoinKind
from dbt.adapters.spark_ivm.compiler.optimize.pruning import key_links
from dbt.adapters.spark_ivm.compiler.plan import Plan, Shape
from dbt.adapters.spark_ivm.compiler.runtime import run_history
from dbt.adapters.spark_ivm.compiler.sql.templates import sql

#: What maintains a join step, by kind (`delta.py`, `outer_join.py`).
_JOIN_RULES = {
    JoinKind.INNER: "sum over inputs: dR1 x R2_old + R1_new x dR2",
    JoinKind.LEFT: "outer padding: NULL-padded rows of the affected keys, new minus old",
    JoinKind.RIGHT: "outer padding: NULL-padded rows of the affected keys, new minus old",
    JoinKind.FULL: "outer padding on both sides: padded rows of the affected keys",
}
_SHAPES = {
    Shape.AGGREGATE: "one state row per group",
    Shape.DISTINCT: "one state row per distinct row, shown while its count is positive",
    Shape.BAG: "one state row per distinct row, shown __ivm_count__ times",
    Shape.WINDOW: "one state row per result row; a change recomputes the partitions it touches",
}


def _first_line(doc: str | None) -> str:
    """A rule docstring's first paragraph on one line: its equation."""
    paragraph = (doc or "").strip().split("\n\n", 1)[0]
    return " ".join(line.strip() for line in paragraph.splitlines())


def plan_lines(plan: Plan) -> list[str]:
    """The operators of one planned state, one line each (pure).

    >>> # select k, sum(x) s from db.t group by k
    >>> # -> ['input t = db.t', 'operator: aggregate by t.k, one state row per group',
    >>> #     '  sum(t.x): sums, sum(x): sum\\' = sum + sum(w * x), ...']
    """
    query = plan.query
    if plan.branches:
        kind = (query.set_op or "union").upper() + ("" if query.distinct else " ALL")
        if query.set_op is None:
            shape = _SHAPES[plan.shape]
        else:
            shown = (
                f"{sql(plan.copies)} times"
                if plan.copies is not None
                else f"while {sql(plan.having)}"
            )
            shape = (
                "one state row per distinct row with its count and its left operand's count "
                f"{sql(plan.rules[0].visible())}, shown {shown}"
            )
        out = [f"operator: {kind} of {len(plan.branches)} branches, {shape}"]
        out.append("  delta: the sum of the branches' deltas, one MERGE")
        for i, branch in enumerate(plan.branches):
            side = ""
            if query.set_op is not None:
                side = " (left operand)" if i < query.left_branches else " (right operand)"
            out.append(f"branch {i}{side}:")
            out.extend(
                f"  {line}" for line in plan_lines(branch) if not line.startswith("operator")
            )
        return out
    out = [f"input {inp.alias} = {inp.relation}" for inp in query.inputs]
    for step in query.steps:
        joined = query.inputs[step.index].alias
        on = sql(step.on)
        out.append(
            f"join: {step.kind.value.upper()} JOIN {joined} ON {on} ({_JOIN_RULES[step.kind]})"
        )
    if query.where is not None:
        out.append(f"where: {sql(query.where)} (applied to every delta)")
    keys = ", ".join(sql(k) for k in plan.keys) if plan.keys else "(no GROUP BY)"
    if plan.shape is Shape.AGGREGATE:
        out.append(f"operator: aggregate by {keys}, {_SHAPES[plan.shape]}")
    elif plan.shape is Shape.WINDOW:
        keys = keys if plan.keys else "(no shared PARTITION BY: the whole result)"
        out.append(f"operator: window, partitions by {keys}, {_SHAPES[plan.shape]}")
        for output in query.outputs:
            out.extend(f"  {sql(w)}" for w in output.find_all(exp.Window))
    else:
        out.append(f"operator: {plan.shape.value}, {_SHAPES[plan.shape]}")
    for rule in plan.rules:
        kind = type(rule).__module__.rsplit(".", 1)[-1]
        helpers = ", ".join(rule.state_columns())
        out.append(
            f"  {sql(rule.agg.call)}: {kind}, {_first_line(type(rule).__doc__)}"
            + (f" [state columns {helpers}]" if helpers else "")
        )
    if plan.having is not None:
        out.append(f"having: {sql(query.having)} (computed by the view from the state)")
    for link in key_links(query):
        mine, other = query.inputs[link.delta], query.inputs[link.other]
        out.append(
            f"key pruning: a change of {mine.relation} reads {other.alias} only at "
            f"{other.alias}.{link.other_column} = the change's {mine.alias}.{link.delta_column}"
        )
    return out


def run_lines(runs: Sequence[run_history.Run]) -> list[str]:
    """The runs, oldest first, one line each as `ivm_explain` prints them (UTC): mode,
    seconds, state rows +inserted ~updated -deleted, bytes changed, and the snapshots the run
    brought the state to (all for the first run, then those that moved).

    >>> runs = [run_history.Run("build", 0, 0.61, 0, 9, (5, 0, 0), (("db.t", 3), ("db.u", 4))),
    ...         run_history.Run("refresh", 61_000, None, 2048, 9, (1, 2, 0), (("db.t", 8), ("db.u", 4)))]
    >>> print("\\n".join(run_lines(runs)))
    1970-01-01 00:00:00 build 0.6 s, rows +5 ~0 -0; snapshots db.t 3, db.u 4
    1970-01-01 00:01:01 refresh ? s, rows +1 ~2 -0, 2048 bytes changed; snapshots db.t 8
    >>> run_lines([run_history.Run("refresh", 0, 1.0)])  # recorded by an older version
    ['1970-01-01 00:00:00 refresh 1.0 s']
    >>> run_lines([run_history.Run("refresh", 0, 9.5, 80, turned=True)])
    ['1970-01-01 00:00:00 refresh turned into a rebuild after its delta, est. 9.5 s, 80 bytes changed']
    """
    lines: list[str] = []
    before: dict[str, int | None] = {}
    for run in runs:
        when = datetime.fromtimestamp(run.started_ms / 1000, UTC)
        how = " turned into a rebuild after its delta, est." if run.turned else ""
        said = [f"{when:%Y-%m-%d %H:%M:%S} {run.mode}{how} {seconds(run.seconds)} s"]
        if run.rows is not None:
            said.append("rows +{} ~{} -{}".format(*run.rows))
        if run.mode == run_history.REFRESH and run.change:
            said.append(f"{run.change} bytes changed")
        moved = [f"{r} {s}" for r, s in run.snapshots if r not in before or before[r] != s]
        before = dict(run.snapshots) or before
        lines.append(", ".join(said) + (f"; snapshots {', '.join(moved)}" if moved else ""))
    return lines or ["none recorded"]


def seconds(seconds: float | None) -> str:
    return "?" if seconds is None else f"{seconds:.1f}"


def title(flow: dataflow.Dataflow, index: int) -> str:
    """How `ivm_explain` heads the state at `index` of `flow`."""
    role = flow.states[index].role
    if role is dataflow.Role.SUB_QUERY:
        return f"sub-query state s{index}"
    if role is dataflow.Role.AUXILIARY:
        return "auxiliary state (the facts pre-aggregated by join key)"
    if flow.sub_queries:
        return "state (over its sub-query states)"
    if len(flow.states) > 1:
        return "state (over the auxiliary state and the dimension)"
    return "state"
