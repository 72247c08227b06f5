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

Past every earlier state, a bag model (no aggregate, no DISTINCT, one SELECT) is rebuilt
from its own SQL instead (`whole_bag`), its base tables pinned at the same snapshots:

    state = γ_(outputs; count(*))( Q at the pinned snapshots )

which is what the plain operator's build computes over one state (a row per distinct
result row with its count, floating keys as their text, `plan.bag_key`), and what the staged
plan computes through its states, since they maintain Q. Spark then plans Q as the table
does (q20's correlated sub-query: a semi join of the 'forest%' parts before the line items
are aggregated) rather than the states' SELECTs joined on distinct keys: q20's statement
0.87-0.96 s against 1.25-1.6 s, its table's 0.82-1.01 s (bench/results/2026-12-05-evening).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler import render
from dbt.adapters.spark_ivm.compiler.frontend.analyze import base_tables, parse_model_sql
from dbt.adapters.spark_ivm.compiler.operators.aggregates import COUNT
from dbt.adapters.spark_ivm.compiler.operators.delta import TermRenderer
from dbt.adapters.spark_ivm.compiler.operators.family import operator_of
from dbt.adapters.spark_ivm.compiler.plan import Plan, Shape, bag_key
from dbt.adapters.spark_ivm.compiler.runtime import facts
from dbt.adapters.spark_ivm.compiler.runtime.session import Head, Session
from dbt.adapters.spark_ivm.compiler.sql.state_table import META, ROW
from dbt.adapters.spark_ivm.compiler.sql.templates import col

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
    # The model's own SQL, where every earlier state is passed (`whole_bag`).
    model_sql: str | None = None


def past(
    session: Session,
    states: Sequence[tuple[str, Plan]],
    reason: str,
    model_sql: str | None = None,
) -> FromBases:
    """The SELECTs computing `states` (state table and plan, in the order they are
    maintained: a later one may read an earlier one, then through its SELECT) from the base
    tables, pinned now; `model_sql` where they are all the model's earlier states."""
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
    return FromBases(reason, computed, pinned, inputs.heads, live, model_sql)


def whole_bag(
    plan: Plan, sql: str, default_db: str, snapshots: Mapping[str, int | None]
) -> exp.Select | None:
    """The data rows of a bag model's state computed from its own SQL (the module docstring),
    each base table read at its snapshot in `snapshots`; None where that is not the state
    (an aggregate, DISTINCT, a set operation, a bag input's repeated rows) or a relation the
    SQL reads has no pinned snapshot (a view, a table read live). Its ORDER BY and LIMIT are
    dropped: the model's view applies them to the state (`top_k.py`).

    >>> from dbt.adapters.spark_ivm.compiler.frontend.analyze import analyze
    >>> from dbt.adapters.spark_ivm.compiler.plan import plan
    >>> q = analyze("select s_name from s", "m", {"db.s": [("s_name", "string")]}, "db")
    >>> the_plan = plan(q, [("s_name", "string")], [])
    >>> sql = ("select s_name from s where s_key in (select k from p where n like 'f%') "
    ...        "order by s_name limit 5")
    >>> print(whole_bag(the_plan, sql, "db", {"db.s": 7, "db.p": 9}).sql("spark"))
    SELECT 0 AS `__ivm_row__`, CAST(NULL AS STRING) AS `__ivm_meta__`, `__ivm_q`.`__ivm_c0` AS `__ivm_k0`, \
COUNT(*) AS `__ivm_count__` FROM (SELECT s_name FROM (SELECT * FROM `db`.`s` VERSION AS OF 7) AS s \
WHERE s_key IN (SELECT k FROM (SELECT * FROM `db`.`p` VERSION AS OF 9) AS p WHERE n LIKE 'f%')) \
AS `__ivm_q`(`__ivm_c0`) GROUP BY `__ivm_q`.`__ivm_c0`
    >>> whole_bag(the_plan, "select s_name from v", "db", {"db.s": 7}) is None  # a view
    True
    >>> whole_bag(the_plan, "select * from s", "db", {"db.s": 7}) is None
    True
    """
    if plan.shape is not Shape.BAG or plan.branches or plan.rules or plan.copies is not None:
        return None
    tree = parse_model_sql(sql)
    if not isinstance(tree, exp.Select) or len(tree.expressions) != len(plan.keys):
        return None
    if any(isinstance(o, exp.Star) or isinstance(o.this, exp.Star) for o in tree.expressions):
        return None  # its columns are named by position below: a star's count is not known
    if any(c.args.get("db") for c in tree.find_all(exp.Column)):
        return None  # `db.t.c`: the table becomes a sub-query named `t`
    for arg in ("order", "limit", "offset"):
        tree.set(arg, None)
    for found, relation in base_tables(tree, default_db):
        snapshot = snapshots.get(relation)
        renamed = found.args.get("alias") is not None and found.args["alias"].columns
        if snapshot is None or renamed:
            return None
        body = render.at_snapshot(relation, snapshot)
        found.replace(exp.alias_(exp.Subquery(this=body), found.alias_or_name, table=True))
    columns = [f"__ivm_c{i}" for i in range(len(plan.keys))]
    alias = exp.TableAlias(
        this=exp.to_identifier("__ivm_q", quoted=True),
        columns=[exp.to_identifier(c, quoted=True) for c in columns],
    )
    keys = [bag_key(col(c, "__ivm_q"), t) for c, t in zip(columns, plan.output_types)]
    return (
        exp.Select()
        .select(
            exp.alias_(exp.Literal.number(0), ROW, quoted=True),
            exp.alias_(exp.cast(exp.null(), exp.DataType.build("string")), META, quoted=True),
            *(exp.alias_(k, n, quoted=True) for k, n in zip(keys, plan.key_columns)),
            exp.alias_(exp.Count(this=exp.Star()), COUNT, quoted=True),
        )
        .from_(exp.Subquery(this=tree, alias=alias))
        .group_by(*(k.copy() for k in keys))
    )
