"""dataflow: a model as the ordered states that maintain it, planned apart from running them.

A model is one state, or several maintained in order, each an operator with a state table of
its own (docs/architecture.md, §4):

* sub-query states `<model>__ivm_s<i>`, innermost first: each sub-query in FROM or JOIN (or
  CTE, EXISTS / IN test, scalar sub-query) that groups, aggregates, is DISTINCT, computes
  windows or is a set operation (`frontend/stages.py`);
* or an auxiliary state `<model>__ivm_aux`: the facts pre-aggregated by the dimension's join
  key (`optimize/aux_state.py`);
* then the model's own state.

A later state reads an earlier one's state table through that state's view SELECT, which is
known only once the earlier state is planned (its columns come from its plan). So a state's
SELECT holds a placeholder relation `__ivm_state_<i>` for each earlier state it reads, and
`StateNode.sql` puts the earlier states' view SELECTs in. Cutting the model into states is
pure (sqlglot only); planning each state needs its inputs' columns and types, which the
runtime reads (`runtime/facts.py`), and running it is the runtime's (`runtime/chain.py`,
`runtime/walk.py`), which walks `Dataflow.states` in order. `ivm_explain` prints the
same dataflow (`runtime/explain.py`).

    select c.region, sum(t.total) s
    from (select cust, sum(amount) total from db.orders group by cust) t
    join db.customers c on c.id = t.cust group by c.region
    ->  s0 (sub-query state m__ivm_s0): select cust, sum(amount) total from db.orders ...
        model (m): select c.region, sum(t.total) s
                   from (select * from __ivm_state_0) t join db.customers c ...
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

import sqlglot
from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.frontend import stages
from dbt.adapters.spark_ivm.compiler.relations import Target, auxiliary_name, sub_query_name
from dbt.adapters.spark_ivm.compiler.sql.templates import sql

#: The relation a state's SELECT reads an earlier state through until that state is planned.
PLACEHOLDER = "__ivm_state_"


class Role(StrEnum):
    """What a state is to the model."""

    SUB_QUERY = "sub-query state"
    AUXILIARY = "auxiliary state"
    MODEL = "the model's state"

    def tag(self, index: int) -> str:
        """The state's short name in a run's timings, by its place in the dataflow.

        >>> Role.SUB_QUERY.tag(1), Role.AUXILIARY.tag(0), Role.MODEL.tag(2)
        ('s1', 'aux', 'model')
        """
        if self is Role.SUB_QUERY:
            return f"s{index}"
        return "aux" if self is Role.AUXILIARY else "model"

    @property
    def in_summary(self) -> str:
        """How a run's one-line summary names an earlier state before its relation."""
        return "aux state" if self is Role.AUXILIARY else "state"


def _placeholder(index: int) -> exp.Select:
    return exp.select(exp.Star()).from_(exp.to_table(f"{PLACEHOLDER}{index}"))


def _placeholder_index(node: exp.Expression) -> int | None:
    """The earlier state a placeholder SELECT stands for (None: not a placeholder)."""
    if not isinstance(node, exp.Select) or len(node.expressions) != 1:
        return None
    source = node.args.get("from_")
    if not isinstance(node.expressions[0], exp.Star) or source is None:
        return None
    relation = source.this
    if not isinstance(relation, exp.Table) or relation.args.get("db"):
        return None  # a table of the model's (qualified by `stages.prepare`), not a placeholder
    name = relation.name
    if not name.startswith(PLACEHOLDER) or node.args.get("joins") or node.args.get("where"):
        return None
    suffix = name[len(PLACEHOLDER) :]
    return int(suffix) if suffix.isdigit() else None


@dataclass(frozen=True)
class StateNode:
    """One state of the dataflow: what it is, where it lives, and the SELECT it maintains."""

    role: Role
    name: str  # the name messages use: the model's, or `<model>__ivm_s<i>` / `__ivm_aux`
    target: Target
    select: exp.Query  # earlier states it reads appear as `SELECT * FROM __ivm_state_<i>`
    reads: tuple[int, ...] = ()  # the earlier states (their place in `Dataflow.states`)
    # The SQL as given, where it has no placeholder: used as it is, since a state records
    # the digest of its SQL text and another rendering of it would rebuild the state.
    text: str | None = None

    def placeholders(self) -> tuple[int, ...]:
        """The earlier states whose view SELECT this state's SQL waits for (an auxiliary
        state's model reads it through its view SELECT already).

        >>> flow = cut("select k, n from (select k, count(*) n from db.t group by k) s",
        ...            Target("db", "m"), "m")
        >>> flow.states[1].placeholders(), flow.states[0].placeholders()
        ((0,), ())
        """
        return _reads(self.select)

    def sql(self, views: Mapping[int, str] | None = None) -> str:
        """The state's SELECT with each earlier state it reads replaced by that state's view
        SELECT (`views`, by place; `render.view_select` of its plan).

        >>> node = cut("select k, n from (select k, count(*) n from db.t group by k) s",
        ...            Target("db", "m"), "m").states[1]
        >>> node.sql({0: "select __ivm_k0 as k, __ivm_count__ as n from s0"})
        'SELECT k, n FROM (SELECT __ivm_k0 AS k, __ivm_count__ AS n FROM s0) AS s'
        """
        tree = self.select.copy()
        placeholders = [
            (sub, index)
            for sub in tree.find_all(exp.Subquery)
            if (index := _placeholder_index(sub.this)) is not None
        ]
        if not placeholders and self.text is not None:
            return self.text
        views = views or {}
        for sub, index in placeholders:
            if index not in views:
                raise ValueError(f"state {self.name} reads state {index}, not planned yet")
            sub.set("this", sqlglot.parse_one(views[index], dialect=stages.DIALECT))
        return sql(tree)


@dataclass(frozen=True)
class Dataflow:
    """A model's states in the order they are maintained; the model's own state is last."""

    model: str
    states: tuple[StateNode, ...]

    @property
    def top(self) -> StateNode:
        return self.states[-1]

    @property
    def sub_queries(self) -> tuple[StateNode, ...]:
        return tuple(s for s in self.states if s.role is Role.SUB_QUERY)

    def lines(self) -> list[str]:
        """The dataflow in words, one line a state (what `ivm_explain` prints first).

        >>> flow = cut("select k, n from (select k, count(*) n from db.t group by k) s",
        ...            Target("db", "m"), "m")
        >>> print("\\n".join(flow.lines()))
        dataflow of 'm': 2 states, maintained in this order
          1. sub-query state db.m__ivm_s0
          2. the model's state db.m, reads 1
        """
        count = len(self.states)
        out = [
            f"dataflow of '{self.model}': "
            + ("1 state" if count == 1 else f"{count} states, maintained in this order")
        ]
        for number, state in enumerate(self.states, start=1):
            reads = ", ".join(str(i + 1) for i in state.reads)
            out.append(
                f"  {number}. {state.role.value} {state.target.view}"
                + (f", reads {reads}" if reads else "")
            )
        return out


def flat(select: str, target: Target, model: str) -> Dataflow:
    """A model maintained as one state.

    >>> flat("select k from db.t", Target("db", "m"), "m").lines()[1]
    "  1. the model's state db.m"
    """
    tree = sqlglot.parse_one(select, dialect=stages.DIALECT)
    assert isinstance(tree, exp.Query)
    return Dataflow(model, (StateNode(Role.MODEL, model, target, tree, text=select),))


def with_auxiliary(aux_select: str, top_select: str, target: Target, model: str) -> Dataflow:
    """A model maintained as its auxiliary state A, then itself over A and the dimension.
    `top_select` reads A's state table through A's view SELECT already (the choice and both
    SELECTs are recorded by the view, `chain_states.py`).

    >>> flow = with_auxiliary("select j, count(*) c from db.f group by j",
    ...     "select d.g, sum(a.c) n from (select j, c from db.m__ivm_aux__ivm_state) a "
    ...     "join db.d d on a.j = d.id group by d.g", Target("db", "m"), "m")
    >>> print("\\n".join(flow.lines()))
    dataflow of 'm': 2 states, maintained in this order
      1. auxiliary state db.m__ivm_aux
      2. the model's state db.m, reads 1
    """
    aux = flat(aux_select, target.auxiliary, auxiliary_name(model)).top
    top = flat(top_select, target, model).top
    return Dataflow(
        model,
        (
            StateNode(Role.AUXILIARY, aux.name, aux.target, aux.select, text=aux_select),
            StateNode(Role.MODEL, model, target, top.select, reads=(0,), text=top_select),
        ),
    )


def cut(tree: exp.Query | str, target: Target, model: str) -> Dataflow:
    """The model's sub-query states, innermost first, then the model: each innermost
    sub-query that keeps a state becomes a state of its own and is replaced in its parent by
    a placeholder for that state (`stages.innermost`). `tree` is the model's SELECT as
    `stages.prepare` leaves it (or SQL already in that form).

    >>> flow = cut('''select b.k, count(*) n from (select distinct k from
    ...               (select k, max(x) m from db.t group by k) a where m > 0) b
    ...               group by b.k''', Target("db", "m"), "m")
    >>> [(s.name, s.reads) for s in flow.states]
    [('m__ivm_s0', ()), ('m__ivm_s1', (0,)), ('m', (1,))]
    >>> flow.states[1].sql({0: "select k, m from s0"})
    'SELECT DISTINCT k FROM (SELECT k, m FROM s0) AS a WHERE m > 0'
    """
    if isinstance(tree, str):
        parsed = sqlglot.parse_one(tree, dialect=stages.DIALECT)
        assert isinstance(parsed, exp.Query)
        tree = parsed
    tree = tree.copy()
    nodes: list[StateNode] = []
    while (sub := stages.innermost(tree)) is not None:
        index = len(nodes)
        nodes.append(
            StateNode(
                Role.SUB_QUERY,
                sub_query_name(model, index),
                target.sub_query(index),
                sub.this.copy(),
                reads=_reads(sub.this),
            )
        )
        sub.set("this", _placeholder(index))
    nodes.append(StateNode(Role.MODEL, model, target, tree, reads=_reads(tree)))
    return Dataflow(model, tuple(nodes))


def _reads(tree: exp.Expression) -> tuple[int, ...]:
    """The earlier states `tree` reads through placeholders, in order."""
    found = (_placeholder_index(s.this) for s in tree.find_all(exp.Subquery))
    return tuple(sorted({i for i in found if i is not None}))
