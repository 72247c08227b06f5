"""The typed IR of a maintainable query: what `analyze` finds in a model's SELECT.

A query is `SELECT outputs FROM join chain WHERE where GROUP BY keys HAVING having`,
optionally DISTINCT. The join chain is left-deep: input 0, then each step joins the chain so
far with one more base relation occurrence (a self join is two occurrences of one relation).
Expressions are sqlglot ASTs whose columns are qualified with the occurrence's alias.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from sqlglot import exp


class JoinKind(str, Enum):
    """How a step of the left-deep chain joins the next input."""

    INNER = "inner"
    LEFT = "left"
    RIGHT = "right"
    FULL = "full"


@dataclass(frozen=True)
class Input:
    """One occurrence of a base relation in FROM: `relation AS alias`.

    `relation` is the normalised `db.table` name; `columns` are the (name, Spark type) pairs of
    the relation, in table order.
    """

    alias: str
    relation: str
    columns: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class JoinStep:
    """`<chain so far> <kind> JOIN inputs[index] ON on` (on is TRUE for comma/cross joins)."""

    kind: JoinKind
    index: int
    on: exp.Expression


class AggKind(str, Enum):
    """Which rule maintains an aggregate call (see `aggregates/`)."""

    COUNT_STAR = "count_star"
    COUNT = "count"
    SUM = "sum"
    AVG = "avg"
    MIN = "min"
    MAX = "max"
    MOMENT = "moment"  # variance and stddev (`aggregates/moments.py`)
    RECOMPUTE = "recompute"


@dataclass(frozen=True)
class Aggregate:
    """One distinct aggregate call of the SELECT or HAVING clause, e.g. `sum(o.total)`."""

    kind: AggKind
    call: exp.Expression
    arg: exp.Expression | None


@dataclass
class Query:
    """A model's SELECT, normalised and checked."""

    model: str
    sql: str
    inputs: list[Input]
    steps: list[JoinStep]
    where: exp.Expression | None
    group_by: list[exp.Expression]
    aggregates: list[Aggregate]
    outputs: list[exp.Expression]
    having: exp.Expression | None
    distinct: bool
    is_aggregate: bool
    notes: list[str] = field(default_factory=list)
    # With window functions (`window.py`): the PARTITION BY expressions all windows share
    # (empty: the whole result is one partition); None without window functions.
    window_keys: list[exp.Expression] | None = None
    # UNION ALL / UNION (`union.py`): the flat branches, each a query of its own; then
    # `inputs` lists every branch's inputs and `outputs` are the first branch's.
    branches: list[Query] = field(default_factory=list)
    # INTERSECT / EXCEPT (`union.py`): "intersect" or "except" (None for a UNION),
    # and how many of `branches` form its left operand (the rest are the right one)
    set_op: str | None = None
    left_branches: int = 0
    # Inputs that are bag states (`bag_input.py`): relation -> copies of each stored row
    weights: dict[str, exp.Expression] = field(default_factory=dict)

    @property
    def relations(self) -> list[str]:
        """The distinct base relations, in order of first occurrence."""
        seen: list[str] = []
        for inp in self.inputs:
            if inp.relation not in seen:
                seen.append(inp.relation)
        return seen

    def columns_of(self, relation: str) -> tuple[tuple[str, str], ...]:
        """The columns of a base relation (from its first occurrence)."""
        for inp in self.inputs:
            if inp.relation == relation:
                return inp.columns
        raise KeyError(relation)

    def columns_read(self) -> dict[str, list[str]]:
        """Per base relation, the columns the query reads (of any occurrence), in table order.

        >>> # select a.k, sum(b.x) from t a join t b on a.k = b.k group by a.k
        >>> # -> {"db.t": ["k", "x"]}
        """
        if self.branches:
            merged: dict[str, set[str]] = {}
            for branch in self.branches:
                for relation, names in branch.columns_read().items():
                    merged.setdefault(relation, set()).update(names)
            return {
                relation: [c for c, _ in self.columns_of(relation) if c in names]
                for relation, names in merged.items()
            }
        nodes = [*self.outputs, *self.group_by, *(step.on for step in self.steps)]
        nodes += [n for n in (self.where, self.having) if n is not None]
        by_alias: dict[str, set[str]] = {}
        for node in nodes:
            for column in node.find_all(exp.Column):
                by_alias.setdefault(column.table, set()).add(column.name.lower())
        read: dict[str, set[str]] = {}
        for inp in self.inputs:
            read.setdefault(inp.relation, set()).update(by_alias.get(inp.alias, set()))
        for relation, copies in self.weights.items():
            read.setdefault(relation, set()).update(
                c.name.lower() for c in copies.find_all(exp.Column)
            )
        return {
            relation: [c for c, _ in self.columns_of(relation) if c.lower() in names]
            for relation, names in read.items()
        }

    def input_named(self, alias: str) -> Input:
        for inp in self.inputs:
            if inp.alias == alias:
                return inp
        raise KeyError(alias)


@dataclass(frozen=True)
class KeyRange:
    """The non-NULL values of one column of a change log, which `optimize/pruning.py` turns
    into filters of the other inputs: bounds (None: no value) and, when few, the values
    themselves (as text), or else, when known, disjoint runs (low, high) that cover them."""

    low: str | None
    high: str | None
    values: tuple[str, ...] | None
    runs: tuple[tuple[str, str], ...] | None = None
