"""The delta of a join chain as a sum of flat terms (Z-sets: every row carries a weight).

For a left-deep chain N_k = N_(k-1) op_k S_k, with R_new / R_old the inputs read at the
snapshots pinned for this refresh and dR their compacted changelogs (+n insert, -n delete):

    d(N_0) = dS_0
    d(N_k) = d(N_(k-1)) JOIN S_k_old  +  N_(k-1)_new JOIN dS_k          (inner part)
             + padded rows of an outer join, see `outer_join.py`

Unrolled for inner joins this is the sum-over-inputs rule of docs/architecture.md, §2:
    d(R1 x R2 x R3) = dR1 x R2_old x R3_old + R1_new x dR2 x R3_old + R1_new x R2_new x dR3.
Example: orders o JOIN customers c with one new order and one deleted customer gives two
terms, `log(o) JOIN c@old` and `o@new JOIN log(c)`, each a flat FROM with the original
aliases, so WHERE, ON and the select list are reused unchanged.

A term whose delta input did not change is empty and is never rendered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.ir import JoinKind, Query
from dbt.adapters.spark_ivm.compiler.sql.templates import col, conj


class Version(StrEnum):
    """Which rows of an input a term reads: at the watermark, at the pinned snapshot, or
    its compacted change between the two (weighted)."""

    OLD = "old"
    NEW = "new"
    DELTA = "delta"


OLD, NEW, DELTA = Version.OLD, Version.NEW, Version.DELTA
WEIGHT = "__ivm_w"


@dataclass(frozen=True)
class Prefix:
    """Inputs 0..last joined as in the model (its own join kinds and ON conditions)."""

    last: int
    version: Version


@dataclass(frozen=True)
class Leaf:
    """Input `index` alone."""

    index: int
    version: Version


@dataclass(frozen=True)
class Term:
    """One flat SELECT of a delta: a FROM, extra inner joins, NULL-padded inputs, filters.

    `base` is a `Prefix` of the chain or one input (`Leaf`), at a version. `joins` appends
    inner joins (input index, version) using each input's own ON condition. `padded` inputs
    contribute NULLs. The term's weight is its delta input's weight (or 1) times `sign`.

    >>> Term(Prefix(0, NEW), joins=((1, DELTA),)).delta_input
    1
    """

    base: Prefix | Leaf
    joins: tuple[tuple[int, Version], ...] = ()
    padded: frozenset[int] = frozenset()
    filters: tuple[exp.Expression, ...] = ()
    sign: int = 1

    def with_join(self, index: int, version: Version) -> Term:
        return replace(self, joins=(*self.joins, (index, version)))

    @property
    def versions(self) -> dict[int, Version]:
        """The version each input the term reads is read at: its base's, then its joins'.

        >>> Term(Prefix(1, NEW), joins=((2, DELTA),)).versions
        {0: <Version.NEW: 'new'>, 1: <Version.NEW: 'new'>, 2: <Version.DELTA: 'delta'>}
        """
        base = self.base
        read = (
            dict.fromkeys(range(base.last + 1), base.version)
            if isinstance(base, Prefix)
            else {base.index: base.version}
        )
        read.update(dict(self.joins))
        return read

    @property
    def delta_input(self) -> int | None:
        """The input read as a delta (a term has at most one), None for a pad term."""
        base = self.base
        if base.version is DELTA:
            return base.last if isinstance(base, Prefix) else base.index
        for index, version in self.joins:
            if version == DELTA:
                return index
        return None


# Renders an input as a FROM item at a version: (input index, version) -> subquery/table.
LeafRenderer = Callable[[int, Version], exp.Expression]


@dataclass
class TermRenderer:
    """Turns terms into Spark SELECTs for one query and one refresh's pinned versions."""

    query: Query
    leaf: LeafRenderer
    changed: frozenset[int] = field(default_factory=frozenset)
    # Relations the terms read by name, computed once before the delta, in the order they
    # were named (a later one may read an earlier one): outer steps' affected keys
    # (`outer_join.py`), by placeholder name.
    shared: dict[str, exp.Expression] = field(default_factory=dict)

    def _on(self, index: int) -> exp.Expression:
        for step in self.query.steps:
            if step.index == index:
                return step.on
        raise KeyError(index)

    def pad(self, node: exp.Expression, padded: frozenset[int]) -> exp.Expression:
        """Replace the columns of padded inputs by typed NULLs: they are absent in this term."""
        if not padded:
            return node.copy()
        types = {self.query.inputs[i].alias: dict(self.query.inputs[i].columns) for i in padded}

        def sub(n: exp.Expression) -> exp.Expression:
            if isinstance(n, exp.Column) and n.table in types:
                dtype = types[n.table].get(n.name, "string")
                return exp.cast(exp.null(), exp.DataType.build(dtype, dialect="spark"))
            return n

        return node.copy().transform(sub, copy=False)

    def source(self, index: int, version: Version) -> exp.Expression:
        """A FROM item for input `index` at `version`, aliased as in the model."""
        node = self.leaf(index, version)
        return exp.alias_(node, self.query.inputs[index].alias, table=True, quoted=True)

    def prefix_from(self, last: int, version: Version) -> exp.Select:
        """`FROM in_0 <kind> JOIN in_1 ON .. <kind> JOIN in_last ON ..`, all at `version`."""
        select = exp.Select().from_(self.source(0, version))
        for step in self.query.steps:
            if step.index > last:
                break
            select = select.join(
                self.source(step.index, version),
                on=step.on.copy(),
                join_type=_JOIN_TYPES[step.kind],
                copy=False,
            )
        return select

    def from_clause(self, term: Term) -> exp.Select:
        base = term.base
        if isinstance(base, Prefix):
            select = self.prefix_from(base.last, base.version)
        else:
            select = exp.Select().from_(self.source(base.index, base.version))
        for index, version in term.joins:
            select = select.join(
                self.source(index, version),
                on=self.pad(self._on(index), term.padded),
                join_type="inner",
                copy=False,
            )
        return select

    def weight(self, term: Term) -> exp.Expression:
        index = term.delta_input
        if index is None:
            return exp.Literal.number(term.sign)
        weight = col(WEIGHT, self.query.inputs[index].alias)
        return weight if term.sign == 1 else exp.Neg(this=weight)

    def render(
        self,
        term: Term,
        projections: Sequence[tuple[str, exp.Expression]],
        with_weight: bool = True,
        with_where: bool = True,
    ) -> exp.Select:
        """SELECT <projections>[, weight] FROM <term> WHERE <model WHERE> AND <term filters>."""
        select = self.from_clause(term)
        for name, node in projections:
            select = select.select(
                exp.alias_(self.pad(node, term.padded), name, quoted=True), copy=False
            )
        if with_weight:
            select = select.select(exp.alias_(self.weight(term), WEIGHT, quoted=True), copy=False)
        filters: list[exp.Expression] = []
        if with_where and self.query.where is not None:
            filters.append(self.pad(self.query.where, term.padded))
        filters.extend(f.copy() for f in term.filters)
        where = conj(filters)
        if where is not None:
            select = select.where(where, copy=False)
        return select


_JOIN_TYPES = {
    JoinKind.INNER: "inner",
    JoinKind.LEFT: "left",
    JoinKind.RIGHT: "right",
    JoinKind.FULL: "full",
}
