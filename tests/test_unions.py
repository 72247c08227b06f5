"""Set operations (issue 13, item 1): what is one state fed by several branches, what is
cut into sub-query states first, and the set operations no rule keeps exact, refused by
name (no Spark: analysis only). The differential families `union_*`, `set_*` check the
results against Spark."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from dbt.adapters.spark_ivm.compiler import dataflow, render
from dbt.adapters.spark_ivm.compiler.errors import UnsupportedQueryError
from dbt.adapters.spark_ivm.compiler.frontend import stages
from dbt.adapters.spark_ivm.compiler.frontend.analyze import analyze
from dbt.adapters.spark_ivm.compiler.plan import Plan, Shape, plan
from dbt.adapters.spark_ivm.compiler.relations import Target
from dbt.adapters.spark_ivm.compiler.runtime.explain_lines import plan_lines

SCHEMAS = {
    "db.t": [("k", "string"), ("x", "int")],
    "db.u": [("k", "string"), ("y", "bigint")],
}
OUT = [("k", "string"), ("x", "bigint")]


@pytest.mark.parametrize(
    ("select", "branches", "shape"),
    [
        ("select k, x from t union all select k, y from u", 2, Shape.BAG),
        # a chain of UNION ALL, a CTE shared by the branches, a branch in parentheses
        (("with f as (select * from t where x > 0) select k, x from f "
         "union all (select k, y from u) union all select k, x + 1 from f"), 3, Shape.BAG),
        ("select k, x from t union select k, y from u", 2, Shape.DISTINCT),
        # under UNION, a nested UNION ALL is part of the same DISTINCT
        ("select k, x from t union (select k, y from u union all select k, x from t)",
         3, Shape.DISTINCT),
    ],
)  # fmt: skip
def test_a_union_is_one_state_over_its_flat_branches(select: str, branches: int, shape: Shape):
    query = analyze(select, "m", SCHEMAS, "db")
    assert len(query.branches) == branches
    assert query.relations == ["db.t", "db.u"]
    the_plan = plan(query, OUT, [])
    assert the_plan.shape is shape and len(the_plan.branches) == branches
    assert all(b.key_columns == the_plan.key_columns for b in the_plan.branches)


@pytest.mark.parametrize(
    ("select", "construct"),
    [
        # analysis alone: a nested set operation reaches it only as a sub-query state's
        # view (`test_a_nested_set_operation_is_a_sub_query_state_of_its_own`)
        ("select k from t intersect select k from u intersect select k from t",
         "an INTERSECT as an operand of an INTERSECT"),
        ("select k from t union all (select k from t union select k from u limit 2)",
         "LIMIT on a branch of a UNION ALL"),
        ("select distinct k from t except all select k from u", "an EXCEPT ALL branch that"),
        ("select k, count(*) from t group by k union all select k, y from u",
         "a UNION ALL branch that aggregates"),
        ("select distinct k from t union all select k from u", "a UNION ALL branch that"),
        ("select k from t union all select k, y from u", "different numbers of columns"),
        ("select k from t union all select k from u limit 2", "LIMIT"),
        ("select k from t where k in (select k from t union all select k from u)",
         "a set operation inside an expression"),
    ],
)  # fmt: skip
def test_set_operations_no_rule_keeps_exact_are_refused_by_name(select: str, construct: str):
    with pytest.raises(UnsupportedQueryError, match=construct):
        analyze(select, "m", SCHEMAS, "db")


@pytest.mark.parametrize(
    ("select", "left", "right", "shape", "shown"),
    [
        ("select k, x from t intersect select k, y from u", 1, 1, Shape.AGGREGATE,
         "__ivm_nn_0 > 0 AND (__ivm_count__ - __ivm_nn_0) > 0"),
        ("select k, x from t except select k, y from u", 1, 1, Shape.AGGREGATE,
         "__ivm_nn_0 > 0 AND (__ivm_count__ - __ivm_nn_0) = 0"),
        # an operand may be a union chain; a chain of EXCEPT subtracts every later operand
        (("(select k, x from t union all select k, y from u) except select k, x from t "
          "except select k, y from u"), 2, 2, Shape.AGGREGATE, None),
        # with DISTINCT branches: only a row's presence counts
        ("select distinct k, x from t intersect select k, y from u", 1, 1, Shape.AGGREGATE, None),
        ("select k, x from t intersect all select k, y from u", 1, 1, Shape.BAG,
         "LEAST(__ivm_nn_0, __ivm_count__ - __ivm_nn_0) > 0"),
        ("select k, x from t except all select k, y from u except all select k, x from t",
         1, 2, Shape.BAG, "(__ivm_nn_0 - (__ivm_count__ - __ivm_nn_0)) > 0"),
    ],
)  # fmt: skip
def test_intersect_and_except_count_each_side(
    select: str, left: int, right: int, shape: Shape, shown: str | None
):
    """INTERSECT / EXCEPT keep, per distinct row, the count of both operands and of the left
    one (`__ivm_nn_0`, a COUNT of the side marker); the view shows what the counts say."""
    query = analyze(select, "m", SCHEMAS, "db")
    assert (query.left_branches, len(query.branches) - query.left_branches) == (left, right)
    the_plan = plan(query, OUT, [])
    assert the_plan.shape is shape
    assert the_plan.state_columns == ["__ivm_k0", "__ivm_k1", "__ivm_count__", "__ivm_nn_0"]
    if shown is not None:
        assert (
            the_plan.having is not None and the_plan.having.sql("spark").replace("`", "") == shown
        )
    lines = plan_lines(the_plan)
    kind = "INTERSECT" if "intersect" in select else "EXCEPT"
    assert lines[0].startswith(f"operator: {kind}"), lines
    assert sum("(left operand)" in line for line in lines) == left
    assert sum("(right operand)" in line for line in lines) == right


def test_a_bag_ivm_model_is_read_as_repeated_rows():
    """A model over a UNION ALL (or plain SELECT) ivm model reads its view, which repeats
    each state row `__ivm_count__` times: the state table becomes an input whose every
    version (and change log) is repeated the same way (`bag_input.py`)."""
    schemas = {"db.up__ivm_state": [("__ivm_row__", "int"), ("__ivm_k0", "string"),
                                    ("__ivm_count__", "bigint")]}  # fmt: skip
    view = (
        "select cast(__ivm_k0 as string) as k from db.up__ivm_state lateral view "
        "explode(array_repeat(0, cast(__ivm_count__ as int))) r as i where __ivm_row__ = 0"
    )
    query = analyze(f"select u.k, count(*) as n from ({view}) u group by u.k", "m", schemas, "db")
    assert [(r, c.sql("spark")) for r, c in query.weights.items()] == [
        ("db.up__ivm_state", "__ivm_count__")
    ]
    assert query.columns_read()["db.up__ivm_state"] == ["__ivm_row__", "__ivm_k0", "__ivm_count__"]
    leaf = render.leaf_at(query, None)(0, "new").sql("spark")
    assert "ARRAY_REPEAT(0, CAST(`__ivm_b`.`__ivm_count__` AS INT))" in leaf, leaf
    # a state read both repeated and as a plain table is not a weighted input: refused
    mixed = f"select u.k, count(*) as n from ({view}) u join db.up__ivm_state s on s.__ivm_k0 = u.k group by u.k"
    with pytest.raises(UnsupportedQueryError, match="an ivm model that keeps a bag of rows"):
        analyze(mixed, "m", schemas, "db")
    # any other generator over a state is still refused by name
    other = view.replace("array_repeat(0, cast(__ivm_count__ as int))", "array(1, 2)")
    with pytest.raises(UnsupportedQueryError, match="an ivm model that keeps a bag of rows"):
        analyze(f"select u.k, count(*) as n from ({other}) u group by u.k", "m", schemas, "db")


def test_a_set_operation_branch_that_aggregates_becomes_a_sub_query_state():
    """A branch that aggregates (or is DISTINCT, or computes windows) is cut into a state
    of its own, like a sub-query in FROM; the set operation then reads its view as a flat
    branch (`stages.wrap_stage_branches`)."""
    select = (
        "select k, count(*) as n from t group by k "
        "union all select k, y from u "
        "union all select distinct k, 1 from u"
    )
    assert stages.needed(select)
    assert not stages.needed("select k, x from t union all select k, y from u")
    flow = dataflow.cut(stages.prepare(select, "m", SCHEMAS, "db"), Target("db", "m"), "m")
    views = {
        # a state's view keeps the sub-query's names
        i: "select __ivm_k0 as `{}`, __ivm_count__ as `{}` from db.s__ivm_state "
        "where __ivm_row__ = 0".format(*s.select.named_selects)
        for i, s in enumerate(flow.sub_queries)
    }
    model = flow.top.sql(views)
    assert len(flow.sub_queries) == 2
    # named by their place among the operands
    assert ") AS __ivm_u0 " in model and ") AS __ivm_u2" in model and "__ivm_u1" not in model
    state = [("__ivm_row__", "int"), ("__ivm_k0", "string"), ("__ivm_count__", "bigint")]
    query = analyze(model, "m", {**SCHEMAS, "db.s__ivm_state": state}, "db")
    assert len(query.branches) == 3 and not any(b.is_aggregate for b in query.branches)


def _cut(select: str) -> tuple[list[tuple[str, Plan]], Plan]:
    """The model cut as `chain.py` cuts it, with each state planned and its view read by
    what is left (every column a string): each sub-query state's SQL and plan, and the
    model's plan."""
    schemas = dict(SCHEMAS)
    assert stages.needed(select)
    flow = dataflow.cut(stages.prepare(select, "m", schemas, "db"), Target("db", "m"), "m")
    cut: list[tuple[str, Plan]] = []
    views: dict[int, str] = {}
    for index, node in enumerate(flow.sub_queries):
        query = analyze(node.sql(views), node.name, schemas, "db")
        the_plan = plan(query, [(name, "string") for name in node.select.named_selects], [])
        schemas[node.target.state] = [("__ivm_row__", "int")] + [
            (c, "string" if c.startswith("__ivm_k") else "bigint") for c in the_plan.state_columns
        ]
        cut.append((node.sql(views), the_plan))
        views[index] = render.view_select(the_plan, node.target.state)
    top = analyze(flow.top.sql(views), "m", schemas, "db")
    return cut, plan(top, [("k", "string")], [])


T, U = "select k from t", "select k from u"


def _operation(select: str) -> str:
    """The set operation `select` is, named as in SQL ("INTERSECT", "EXCEPT ALL", ..)."""
    tree = sqlglot.parse_one(select, dialect="spark")
    return type(tree).__name__.upper() + ("" if tree.args.get("distinct") else " ALL")


@pytest.mark.parametrize(
    ("select", "inner", "top", "reads"),
    [
        # (a INTERSECT b) INTERSECT c: the inner one is a state of distinct rows, filtered
        (f"{T} intersect {U} intersect {T}", [("INTERSECT", Shape.AGGREGATE)],
         ("intersect", Shape.AGGREGATE), [("db.m__ivm_s0__ivm_state", "left", None)]),
        # with ALL: a bag state, read least(l, r) times
        (f"{T} intersect all {U} intersect all {T}", [("INTERSECT ALL", Shape.BAG)],
         ("intersect", Shape.BAG),
         [("db.m__ivm_s0__ivm_state", "left", "LEAST(__ivm_nn_0, __ivm_count__ - __ivm_nn_0)")]),
        (f"({T} except {U}) union all {T}", [("EXCEPT", Shape.AGGREGATE)], (None, Shape.BAG),
         [("db.m__ivm_s0__ivm_state", None, None)]),
        (f"{T} except ({U} intersect {T})", [("INTERSECT", Shape.AGGREGATE)],
         ("except", Shape.AGGREGATE), [("db.m__ivm_s0__ivm_state", "right", None)]),
        # INTERSECT binds tighter than UNION / EXCEPT (Spark and sqlglot): a UNION (b INTERSECT c)
        (f"{T} union {U} intersect {T}", [("INTERSECT", Shape.AGGREGATE)],
         (None, Shape.DISTINCT), [("db.m__ivm_s0__ivm_state", None, None)]),
        # EXCEPT mixed with EXCEPT ALL: (a EXCEPT ALL b) EXCEPT c, and the other way round
        (f"{T} except all {U} except {T}", [("EXCEPT ALL", Shape.BAG)],
         ("except", Shape.AGGREGATE),
         [("db.m__ivm_s0__ivm_state", "left", "__ivm_nn_0 - (__ivm_count__ - __ivm_nn_0)")]),
        (f"{T} except {U} except {T} except all {U}", [("EXCEPT", Shape.AGGREGATE)],
         ("except", Shape.BAG), [("db.m__ivm_s0__ivm_state", "left", None)]),
        # a UNION inside an ALL form: a state of distinct rows
        (f"{T} union all ({U} union {T})", [("UNION", Shape.DISTINCT)], (None, Shape.BAG),
         [("db.m__ivm_s0__ivm_state", None, None)]),
        (f"{U} union {T} union all {T}", [("UNION", Shape.DISTINCT)], (None, Shape.BAG),
         [("db.m__ivm_s0__ivm_state", None, None)]),
        (f"{T} intersect all ({U} union {T})", [("UNION", Shape.DISTINCT)],
         ("intersect", Shape.BAG), [("db.m__ivm_s0__ivm_state", "right", None)]),
        # four operands: a state over a state
        (f"{T} intersect {U} intersect {T} intersect {U}",
         [("INTERSECT", Shape.AGGREGATE), ("INTERSECT", Shape.AGGREGATE)],
         ("intersect", Shape.AGGREGATE), [("db.m__ivm_s1__ivm_state", "left", None)]),
    ],
)  # fmt: skip
def test_a_nested_set_operation_is_a_sub_query_state_of_its_own(
    select: str,
    inner: list[tuple[str, Shape]],
    top: tuple[str | None, Shape],
    reads: list[tuple[str, str | None, str | None]],
):
    """A set operation the flat rule does not combine (an operand of an INTERSECT / EXCEPT,
    a third INTERSECT operand, an EXCEPT ALL link of an EXCEPT chain, a UNION inside an ALL
    form, an INTERSECT / EXCEPT inside a UNION) is cut into a state of its own; the outer
    set operation reads its view as a flat branch, repeated when the state is a bag. `reads`:
    each state the model reads, on which side of its INTERSECT / EXCEPT, with its copies."""
    cut, the_plan = _cut(select)
    assert [(_operation(s), p.shape) for s, p in cut] == inner
    assert (the_plan.query.set_op, the_plan.shape) == top
    query = the_plan.query
    for state, side, copies in reads:
        [n] = [n for n, b in enumerate(query.branches) if b.relations == [state]]
        if side is not None:
            assert ("left" if n < query.left_branches else "right") == side
        weight = query.branches[n].weights.get(state)
        assert (weight and weight.sql("spark").replace("`", "")) == copies
    # the outer set operation reads only flat branches: base tables and the states' views
    assert not any(b.is_aggregate or b.branches for b in query.branches)


def test_nested_set_operations_are_cut_in_sub_queries_and_ctes_too():
    """The same cut applies to a set operation in FROM or in a CTE (each its own stage),
    innermost first, and names a nested operand after its parent's: __ivm_u0_1 is operand
    1 of __ivm_u0."""
    select = (
        f"with i as ({T} intersect {U} intersect {T}) "
        f"select x.k, count(*) as n from ({T} except all ({U} union {T})) x "
        "join i on i.k = x.k group by x.k"
    )
    tree = stages.prepare(select, "m", SCHEMAS, "db")
    aliases = [sub.alias for sub in tree.find_all(exp.Subquery) if sub.alias]
    assert sorted(aliases) == ["__ivm_u0", "__ivm_u1", "i", "x"]
    nested = f"{T} union all ({U} union ({T} intersect {U}) union {T})"
    prepared = stages.prepare(nested, "m", SCHEMAS, "db").sql("spark")
    assert "AS __ivm_u1_1" in prepared and "AS __ivm_u1" in prepared
    cut, _ = _cut(nested)
    assert [p.shape for _, p in cut] == [Shape.AGGREGATE, Shape.DISTINCT]
    # in a sub-query, a branch that aggregates is a state; a DISTINCT branch too, except
    # under a distinct operation, where its plain rows have the same presence
    for body, wrapped in [
        ("select k, count(*) as c from t group by k union select k, 1 from u", True),
        ("select distinct k from t union all select k from u", True),
        ("select distinct k from t union select k from u", False),
    ]:
        prepared = stages.prepare(f"select x.k from ({body}) x", "m", SCHEMAS, "db")
        assert ("__ivm_u0" in prepared.sql("spark")) is wrapped, body
    # LIMIT in a nested set operation stays refused by name, by its stage
    with pytest.raises(UnsupportedQueryError, match="LIMIT"):
        _cut(f"{T} union all ({U} union {T} limit 2)")
