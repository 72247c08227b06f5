"""window: window functions, maintained by recomputing the partitions a change touches.

A window function's value in a row depends only on the rows of its partition. So for a
SELECT with windows over Q0 (its FROM, joins and WHERE) and any set P of whole partitions:

    result restricted to P = the SELECT over (Q0 restricted to P)

State: one row per result row, each output (window values included) in `__ivm_o<i>`, and the
partition key in `__ivm_k<j>`: the PARTITION BY expressions that every window of the SELECT
shares (a partition of that key holds whole partitions of every window). A refresh:

    affected   A = the keys of the rows of dQ0 whose window inputs changed (compacted delta)
    recompute  R = the SELECT over the new inputs, only rows whose key is in A
    commit     state := state - (rows whose key is in A) + R, with the watermarks, one MERGE

Example: `select cust, ts, row_number() over (partition by cust order by ts) as n from o`;
a new order of customer 7 -> A = {7}; customer 7's rows are numbered again and replace its
old rows; no other customer's rows are recomputed or rewritten.

Windows with no PARTITION BY expression in common (or none at all) make the whole result one
partition: every change recomputes it, and the log says so. Row order inside a partition is
the SELECT's own: ties in ORDER BY leave row_number, lag/lead and ROWS frames to Spark's
choice, in a full run as in a refresh.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.errors import UnsupportedQueryError
from dbt.adapters.spark_ivm.compiler.errors import fragment as _fragment
from dbt.adapters.spark_ivm.compiler.operators.aggregates import COUNT
from dbt.adapters.spark_ivm.compiler.operators.delta import TermRenderer
from dbt.adapters.spark_ivm.compiler.operators.prepare import (
    MetaRow,
    MetaWrite,
    Names,
    Prepared,
    Run,
)
from dbt.adapters.spark_ivm.compiler.plan import Plan, output_column
from dbt.adapters.spark_ivm.compiler.render import full_term
from dbt.adapters.spark_ivm.compiler.render import typed as typed_as
from dbt.adapters.spark_ivm.compiler.sql.merge import When, merge_into
from dbt.adapters.spark_ivm.compiler.sql.state_table import META, ROW, meta_unchanged, with_meta_row
from dbt.adapters.spark_ivm.compiler.sql.templates import col, null_safe_match, sql, table, text

TAG = "__ivm_tag"  # MERGE source rows: 'i' a recomputed row, 'd' an affected key, 'm' metadata
ANY = "__ivm_any"  # the affected table's column when the whole result is one partition
WHOLE_RESULT_NOTE = (
    "its windows share no PARTITION BY expression, so the whole result is one partition: "
    "every change recomputes all of it"
)


def windows_of(select: exp.Select) -> list[exp.Window]:
    """The window functions of `select` itself (not of its sub-queries)."""
    return [w for w in select.find_all(exp.Window) if w.find_ancestor(exp.Select) is select]


def partition_keys(outputs: list[exp.Expression]) -> list[exp.Expression]:
    """The PARTITION BY expressions every window of the select list has, in the first
    window's order.

    >>> # rank() over (partition by a, b ..), sum(x) over (partition by b ..) -> [b]
    """
    windows = [w for o in outputs for w in o.find_all(exp.Window)]
    if not windows:
        return []
    shared = [
        key
        for key in windows[0].args.get("partition_by") or []
        if all(any(key == other for other in w.args.get("partition_by") or []) for w in windows[1:])
    ]
    unique: list[exp.Expression] = []
    for key in shared:
        if key not in unique and not isinstance(key, exp.Literal):
            unique.append(key)
    return [k.copy() for k in unique]


def check(tree: exp.Select, model: str, is_aggregate: bool, distinct: bool) -> list[str]:
    """Refuse windows no rule maintains; the notes a windowed model logs."""
    windows = windows_of(tree)
    if not windows:
        return []
    if is_aggregate:
        raise UnsupportedQueryError(
            model,
            "a window function together with GROUP BY or aggregates in one SELECT",
            _fragment(windows[0]),
            "Aggregate in a sub-query or CTE and compute the window over it: "
            "select .., rank() over (..) from (select .. group by ..) t",
        )
    outputs = list(tree.expressions)
    listed = [w for o in outputs for w in o.find_all(exp.Window)]
    for w in windows:
        if not any(w is found for found in listed):
            raise UnsupportedQueryError(
                model, "a window function outside the select list", _fragment(w)
            )
        inner = [a for a in w.find_all(exp.AggFunc, exp.Window) if a is not w and a is not w.this]
        if inner:
            raise UnsupportedQueryError(
                model, "an aggregate or window inside a window function", _fragment(w)
            )
    if distinct:
        raise UnsupportedQueryError(
            model,
            "SELECT DISTINCT together with a window function",
            _fragment(windows[0]),
            "Compute the window in a sub-query and select DISTINCT over it.",
        )
    if not partition_keys(outputs):
        return [WHOLE_RESULT_NOTE]
    return []


def _rows(plan: Plan, renderer: TermRenderer, filters: tuple[exp.Expression, ...]) -> exp.Select:
    """The model's rows over the new inputs, as state rows (the windows are computed over
    the rows `filters` keep: whole partitions)."""
    projections: list[tuple[str, exp.Expression]] = [
        (ROW, exp.Literal.number(0)),
        (META, exp.cast(exp.null(), exp.DataType.build("string"))),
        *zip(plan.key_columns, plan.keys),
        (COUNT, exp.Literal.number(1)),
    ]
    for i, output in enumerate(plan.query.outputs):
        projections.append((output_column(i), output.unalias()))
    term = replace(full_term(plan.query), filters=filters)
    return renderer.render(term, projections, with_weight=False)


def initial_select(plan: Plan, renderer: TermRenderer, meta: str) -> exp.Expression:
    """Every result row, plus the metadata row holding the watermarks."""
    return with_meta_row(_rows(plan, renderer, ()), meta, plan.state_columns)


def affected_select(plan: Plan, compacted: exp.Select) -> exp.Select:
    """A: the distinct partition keys of the compacted delta (one row `ANY` when the whole
    result is one partition and anything changed)."""
    source = exp.alias_(exp.Subquery(this=compacted), "__ivm_rows", table=True)
    if not plan.keys:
        return exp.Select().select(exp.alias_(exp.Literal.number(1), ANY)).from_(source).limit(1)
    return exp.Select().select(*(col(k) for k in plan.key_columns)).from_(source).distinct()


def recompute_select(plan: Plan, renderer: TermRenderer, affected: str) -> exp.Select:
    """R: the model's rows of the affected partitions, recomputed from the new inputs."""
    if not plan.keys:
        return _rows(plan, renderer, ())
    hit = (
        exp.Select()
        .select(exp.Literal.number(1))
        .from_(exp.alias_(table(affected), "a", table=True))
        .where(null_safe_match([col(k, "a") for k in plan.key_columns], plan.keys))
    )
    return _rows(plan, renderer, (exp.Exists(this=hit),))


def merge_sql(
    plan: Plan,
    state: str,
    affected: str,
    recomputed: str,
    meta: MetaWrite,
    types: Mapping[str, str],
) -> str:
    """The refresh's single commit: delete the affected partitions' rows, insert their
    recomputed rows and advance the watermarks, in one MERGE.

    Each target row matches at most one source row: an affected key ('d', distinct) or the
    metadata row ('m'); the recomputed rows ('i') match nothing and are inserted."""
    columns = plan.state_columns

    def typed(node: exp.Expression, name: str) -> exp.Expression:
        return typed_as(node, name, types)

    inserted = (
        exp.Select()
        .select(
            exp.alias_(exp.Literal.string("i"), TAG, quoted=True),
            exp.alias_(exp.Literal.number(0), ROW, quoted=True),
            exp.alias_(typed(exp.null(), META), META, quoted=True),
            *(exp.alias_(typed(col(c, "r"), c), c, quoted=True) for c in columns),
        )
        .from_(exp.alias_(table(recomputed), "r", table=True))
    )
    keys = set(plan.key_columns)
    deleted = (
        exp.Select()
        .select(
            exp.alias_(exp.Literal.string("d"), TAG, quoted=True),
            exp.alias_(exp.Literal.number(0), ROW, quoted=True),
            exp.alias_(typed(exp.null(), META), META, quoted=True),
            *(
                exp.alias_(col(c, "a") if c in keys else typed(exp.null(), c), c, quoted=True)
                for c in columns
            ),
        )
        .from_(exp.alias_(table(affected), "a", table=True))
    )
    meta_row = exp.Select().select(
        exp.alias_(exp.Literal.string("m"), TAG, quoted=True),
        exp.alias_(exp.Literal.number(1), ROW, quoted=True),
        exp.alias_(text(meta.written), META, quoted=True),
        *(exp.alias_(typed(exp.null(), c), c, quoted=True) for c in columns),
    )
    using = exp.union(exp.union(inserted, deleted, distinct=False), meta_row, distinct=False)
    match = exp.or_(
        exp.and_(
            exp.EQ(this=col(TAG, "d"), expression=exp.Literal.string("m")),
            exp.EQ(this=col(ROW, "s"), expression=exp.Literal.number(1)),
        ),
        exp.and_(
            exp.EQ(this=col(TAG, "d"), expression=exp.Literal.string("d")),
            exp.EQ(this=col(ROW, "s"), expression=exp.Literal.number(0)),
            null_safe_match(
                [col(k, "s") for k in plan.key_columns], [col(k, "d") for k in plan.key_columns]
            ),
        ),
    )
    names = ", ".join(sql(col(c)) for c in [ROW, META, *columns])
    values = ", ".join(sql(col(c, "d")) for c in [ROW, META, *columns])
    whens = [
        When.matched(f"UPDATE SET {META} = d.{META}", f"d.{TAG} = 'm'"),
        When.matched("DELETE"),
        When.not_matched(f"INSERT ({names}) VALUES ({values})", f"d.{TAG} = 'i'"),
    ]
    return merge_into(state, using, match, whens, meta_unchanged(state, meta.read))


def prepare(
    run: Run,
    names: Names,
    plan: Plan,
    renderer: TermRenderer,
    compacted: exp.Select,
    new_meta: MetaRow,
) -> Prepared:
    """The affected partitions, their recomputed rows and the MERGE that swaps them in; no
    MERGE when no change reaches a window's input."""
    # Each relation counted as it is computed: a query counting both took two jobs more.
    partitions = run.compute_counted("delta", names.delta, affected_select(plan, compacted))
    keys = (names.delta, list(plan.key_columns))
    run.checkpoint("delta")
    if not partitions:
        run.checkpoint("recompute")
        return Prepared(None, keys)
    select = recompute_select(plan, renderer, names.delta)
    rows = run.compute_counted("recompute", names.recomputed, select)
    run.checkpoint("recompute")
    types = run.state_types()
    # The partitions' rows are rewritten: counted as inserted, as `adapter_response` does.
    meta = new_meta(rows, 0, 0)
    commit = merge_sql(plan, names.state, names.delta, names.recomputed, meta, types)
    return Prepared(commit, keys, partitions=partitions, partition_rows=rows)
