"""The dataflow of a model: its states in the order they are maintained (pure, no Spark).

`dataflow.cut` makes the sub-query states and the model's state of a prepared SELECT; the
runtime (`walk.walk`) and `ivm_explain` walk it. A state records the digest of
its SQL, so the SQL each state is given must be the text the states were built from before
the dataflow existed: each test here compares with the cut made in place (`_cut_in_place`,
the former loop of the runtime), for the nested shapes the sub-query families run.
"""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from dbt.adapters.spark_ivm.compiler import dataflow
from dbt.adapters.spark_ivm.compiler.frontend import stages
from dbt.adapters.spark_ivm.compiler.relations import Target

SCHEMAS = {
    "db.t": [("k", "int"), ("x", "int")],
    "db.u": [("k", "int"), ("y", "int")],
    "db.v": [("k", "int"), ("z", "int")],
}
TARGET = Target("db", "m")


def _view(index: int, select: exp.Expression) -> str:
    """A stand-in for state `index`'s view SELECT: its columns, by name, from its table."""
    names = ", ".join(f"`{n}`" for n in select.named_selects)
    return f"SELECT {names} FROM db.m__ivm_s{index}__ivm_state WHERE __ivm_row__ = 0"


def _cut_in_place(tree: exp.Query) -> tuple[list[str], str]:
    """Each innermost state's SQL, its sub-query then replaced by its view SELECT in place."""
    tree = tree.copy()
    bodies: list[str] = []
    while (sub := stages.innermost(tree)) is not None:
        bodies.append(sub.this.sql(dialect="spark"))
        sub.set("this", sqlglot.parse_one(_view(len(bodies) - 1, sub.this), dialect="spark"))
    return bodies, tree.sql(dialect="spark")


def _cut(tree: exp.Query) -> tuple[list[str], str, dataflow.Dataflow]:
    flow = dataflow.cut(tree, TARGET, "m")
    views: dict[int, str] = {}
    bodies: list[str] = []
    for index, node in enumerate(flow.sub_queries):
        bodies.append(node.sql(views))
        views[index] = _view(index, node.select)
    return bodies, flow.top.sql(views), flow


SHAPES = {
    "two_levels": (
        (
            "select b.k, count(*) n from (select distinct k from (select k, max(x) m from t "
            "group by k) a where m > 0) b group by b.k"
        ),
        [(), (0,), (1,)],
    ),
    "two_siblings": (
        (
            "select a.k, a.s, b.n from (select k, sum(x) s from t group by k) a "
            "join (select k, count(*) n from u group by k) b on a.k = b.k"
        ),
        [(), (), (0, 1)],
    ),
    "sub_query_tests": (
        (
            "select t.k, (select count(*) from u where u.k = t.k) as n from t "
            "where exists (select 1 from v where v.k = t.k and v.z > 0) "
            "and t.x in (select y from u)"
        ),
        [(), (), (), (0, 1, 2)],
    ),
    "not_in": (
        "select t.k from t where t.x > 0 and t.x not in (select u.y from u where u.k = t.k)",
        [(), (), (0, 1)],
    ),
    "cte_used_twice": (
        (
            "with g as (select k, sum(x) s from t group by k) "
            "select a.k, a.s, b.s as s2 from g a join g b on a.k = b.k + 1"
        ),
        [(), (), (0, 1)],
    ),
    "having_scalar": (
        (
            "select t.k, sum(t.x) as s from t group by t.k "
            "having sum(t.x) > (select 0.5 * sum(u.y) from u)"
        ),
        [(), (), (0, 1)],
    ),
    "union_branches": (
        (
            "select k, count(*) as n from t group by k union all select k, y from u "
            "union all select distinct k, 1 from u"
        ),
        [(), (), (0, 1)],
    ),
    "aggregate_of_aggregate": (
        "select s, count(*) c from (select k, sum(x) s from t group by k) a group by s",
        [(), (0,)],
    ),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_each_state_gets_the_sql_the_in_place_cut_gave(name: str):
    """Same states, same order, the same SQL text for each (so no state is rebuilt by the
    change to a dataflow), and each state reads exactly the states whose placeholders it
    holds."""
    select, reads = SHAPES[name]
    tree = stages.prepare(select, "m", SCHEMAS, "db")
    bodies, model, flow = _cut(tree)
    assert (bodies, model) == _cut_in_place(tree)
    assert [s.reads for s in flow.states] == reads
    assert [s.role for s in flow.states] == [dataflow.Role.SUB_QUERY] * (len(reads) - 1) + [
        dataflow.Role.MODEL
    ]
    assert [s.target.view for s in flow.sub_queries] == [
        f"db.m__ivm_s{i}" for i in range(len(reads) - 1)
    ]
    assert dataflow.PLACEHOLDER not in model and all(dataflow.PLACEHOLDER not in b for b in bodies)


def test_a_state_read_before_it_is_planned_is_an_error():
    flow = dataflow.cut(stages.prepare(SHAPES["two_levels"][0], "m", SCHEMAS, "db"), TARGET, "m")
    with pytest.raises(ValueError, match="reads state 1, not planned yet"):
        flow.top.sql({0: "SELECT 1 AS k"})


def test_a_flat_model_is_one_state_whose_sql_is_kept_verbatim():
    """The model's SQL as compiled, comments and spacing included: its digest is recorded."""
    select = "select k,  sum(x) s -- total\nfrom db.t group by k"
    flow = dataflow.flat(select, TARGET, "m")
    assert [s.role for s in flow.states] == [dataflow.Role.MODEL]
    assert flow.top.sql() == select
    assert flow.lines() == ["dataflow of 'm': 1 state", "  1. the model's state db.m"]


def test_an_auxiliary_state_comes_first_and_the_model_reads_it():
    aux = "select o.c as aux_j0, count(*) as aux_x0 from db.o o group by o.c"
    top = (
        "select d.g, sum(a.aux_x0) n from (select aux_j0, aux_x0 from db.m__ivm_aux__ivm_state)"
        " a join db.d d on a.aux_j0 = d.id group by d.g"
    )
    flow = dataflow.with_auxiliary(aux, top, TARGET, "m")
    assert [(s.role, s.target.view, s.reads) for s in flow.states] == [
        (dataflow.Role.AUXILIARY, "db.m__ivm_aux", ()),
        (dataflow.Role.MODEL, "db.m", (0,)),
    ]
    assert [s.sql() for s in flow.states] == [aux, top]


def test_a_table_of_the_model_named_like_a_placeholder_is_read_as_it_is():
    """Placeholders are unqualified; every table of a prepared SELECT has its database."""
    select = "select s.k from (select * from db.__ivm_state_0) s"
    flow = dataflow.cut(select, TARGET, "m")
    assert [s.placeholders() for s in flow.states] == [()]
    assert flow.top.sql() == "SELECT s.k FROM (SELECT * FROM db.__ivm_state_0) AS s"
