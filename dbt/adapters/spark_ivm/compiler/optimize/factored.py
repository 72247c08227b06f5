"""factored: the delta terms that read a chain's first input at the new version read it once.

For an inner join chain R0 x R1 x .. x Rm the sum-over-inputs rule (`delta.py`) gives one
term per changed input; every term of a changed Rk with k >= 1 reads R0 at the new version:

    R0_new x R1_new x .. x dRk x .. x Rm_old        (k = 1 .. m, Rk changed)

By distributivity their sum is one join of R0 with a small bracket:

    R0_new x SUM_k [ R1_new x .. x dRk x .. x Rm_old ]  =  R0_new x d(R1 x .. x Rm)

and R0, usually the fact table, is read once instead of once per changed dimension. The
bracket is a UNION ALL of the rest of the chain's terms; its rows carry the columns of R1..Rm
that the model reads, under names of their own (`__ivm_f<input>__<column>`), and the weight of
their delta input; the model's projections, its WHERE and the ON of step 1 read them there.

Example: `orders o JOIN customers c ON o.o_custkey = c.c_custkey JOIN nations n ON
c.c_nationkey = n.n_nationkey`, customers and nations changed:

    o@new JOIN (SELECT c.., n.., c.w FROM log(c) c JOIN n@old
                UNION ALL
                SELECT c.., n.., n.w FROM c@new c JOIN log(n) n) f
          ON o.o_custkey = f.c_custkey

instead of `o@new JOIN log(c) JOIN n@old` plus `o@new JOIN c@new JOIN log(n)`.

Only where the rewrite is exact and pays:
* every join of the model is inner, and the ON of every step after the first reads no column
  of R0 (so the bracket joins without it); every column the outer query reads is qualified;
* at least two of R1..Rm changed, and at least one of their terms reads R0 without a key
  filter today (`pruning.py`): when each of them prunes R0 by its own keys, the separate
  pruned reads are kept.
Key filters between inputs of the bracket stay on its terms; those on R0 are dropped (R0 is
read once, whole, as the unpruned term read it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.ir import JoinKind, KeyRange, Query
from dbt.adapters.spark_ivm.compiler.operators.delta import (
    DELTA,
    NEW,
    WEIGHT,
    Leaf,
    Prefix,
    Term,
    TermRenderer,
)
from dbt.adapters.spark_ivm.compiler.optimize.pruning import (
    KeyLink,
    enforced,
    prune_terms,
)
from dbt.adapters.spark_ivm.compiler.sql.templates import col, union_all

BRACKET = "__ivm_f"
#: The most rows a computed bracket has for a broadcast hint (a few columns a row: tens of MB).
BROADCAST_ROWS = 1_000_000


@dataclass(frozen=True)
class Factoring:
    """The terms a refresh renders as they are, and those rendered as one factored term."""

    plain: list[Term]
    factored: list[Term]


def _first_input_term(term: Term) -> bool:
    """A term of a changed input k >= 1: inputs 0..k-1 at the new version, then dRk."""
    base = term.base
    return (
        isinstance(base, Prefix)
        and base.version is NEW
        and bool(term.joins)
        and term.joins[0][1] is DELTA
    )


def _bracket_term(term: Term) -> Term:
    """The term of dRk without R0: R1..R(k-1) new, dRk, R(k+1).. old, over inputs 1..m."""
    assert isinstance(term.base, Prefix)
    k = term.base.last + 1
    if k == 1:
        return Term(base=Leaf(1, DELTA), joins=term.joins[1:])
    joins = tuple((i, NEW) for i in range(2, k)) + term.joins
    return Term(base=Leaf(1, NEW), joins=joins)


def _qualified(nodes: Sequence[exp.Expression], aliases: set[str]) -> bool:
    for node in nodes:
        if node.find(exp.Star, exp.Subquery, exp.Exists, exp.Lambda) is not None:
            return False
        if any(c.table not in aliases for c in node.find_all(exp.Column)):
            return False
    return True


def split(
    terms: Sequence[Term],
    query: Query,
    links: Sequence[KeyLink],
    ranges: Mapping[tuple[int, str], KeyRange] | None,
    projections: Sequence[tuple[str, exp.Expression]],
) -> Factoring:
    """Which terms to factor (none when the rewrite is not exact or would not pay).

    >>> from dbt.adapters.spark_ivm.compiler.frontend.analyze import analyze
    >>> from dbt.adapters.spark_ivm.compiler.operators.join import join_delta_terms
    >>> from dbt.adapters.spark_ivm.compiler.optimize.pruning import key_links
    >>> kj = [("k", "int"), ("j", "int")]
    >>> q = analyze("select o.k, count(*) n from o join c on o.k = c.k join n on c.j = n.j "
    ...             "group by o.k", "m", {"db.o": kj, "db.c": kj, "db.n": kj}, "db")
    >>> renderer = TermRenderer(q, lambda i, v: exp.to_table(f"{v}_{q.inputs[i].alias}"),
    ...                         changed=frozenset({1, 2}))  # c and n changed, o did not
    >>> found = split(join_delta_terms(renderer), q, key_links(q), None, [("k", q.outputs[0])])
    >>> def show(term):
    ...     return " x ".join(f"{q.inputs[i].alias}@{v}" for i, v in sorted(term.versions.items()))
    >>> [show(t) for t in found.plain], [show(t) for t in found.factored]
    ([], ['o@new x c@delta x n@old', 'o@new x c@new x n@delta'])
    """
    keep = Factoring(list(terms), [])
    if len(query.inputs) < 3 or any(s.kind is not JoinKind.INNER for s in query.steps):
        return keep
    first = query.inputs[0].alias
    aliases = {inp.alias for inp in query.inputs}
    if len(aliases) != len(query.inputs):
        return keep
    if any(
        any(c.table == first for c in s.on.find_all(exp.Column)) for s in query.steps if s.index > 1
    ):
        return keep
    outer = [node for _, node in projections] + [s.on for s in query.steps]
    if query.where is not None:
        outer.append(query.where)
    if not _qualified(outer, aliases):
        return keep
    factored = [t for t in terms if _first_input_term(t)]
    if len(factored) < 2:
        return keep

    def prunes_first(term: Term) -> bool:
        delta = term.delta_input
        return any(
            link.delta == delta
            and link.other == 0
            and ranges is not None
            and (delta, link.delta_column) in ranges
            and enforced(term, query, link.step)
            for link in links
        )

    if all(prunes_first(t) for t in factored):
        return keep
    return Factoring([t for t in terms if not _first_input_term(t)], factored)


def _bracket_name(index: int, column: str) -> str:
    return f"{BRACKET}{index}__{column}"


def render(
    renderer: TermRenderer,
    terms: Sequence[Term],
    links: Sequence[KeyLink],
    ranges: Mapping[tuple[int, str], KeyRange] | None,
    projections: Sequence[tuple[str, exp.Expression]],
) -> exp.Select:
    """`SELECT <projections>, f.w FROM R0@new JOIN (<bracket>) f ON <step 1> WHERE <where>`."""
    query = renderer.query
    index_of = {inp.alias: i for i, inp in enumerate(query.inputs)}
    step_one = next(s for s in query.steps if s.index == 1)
    outer = [node for _, node in projections] + [step_one.on]
    if query.where is not None:
        outer.append(query.where)
    read: list[tuple[int, str]] = []
    for node in outer:
        for column in node.find_all(exp.Column):
            key = (index_of[column.table], column.name)
            if key[0] != 0 and key not in read:
                read.append(key)

    def moved(node: exp.Expression) -> exp.Expression:
        def sub(n: exp.Expression) -> exp.Expression:
            if isinstance(n, exp.Column) and index_of.get(n.table, 0) != 0:
                return col(_bracket_name(index_of[n.table], n.name), BRACKET)
            return n

        return node.copy().transform(sub, copy=False)

    inner_links = [link for link in links if 0 not in (link.delta, link.other)]
    bracket_terms = [_bracket_term(t) for t in terms]
    if ranges:
        bracket_terms = prune_terms(bracket_terms, query, inner_links, ranges)
    parts: list[exp.Select] = []
    for term in bracket_terms:
        part = renderer.from_clause(term)
        for index, name in read:
            column = exp.column(name, table=query.inputs[index].alias, quoted=True)
            part = part.select(exp.alias_(column, _bracket_name(index, name), quoted=True))
        part = part.select(exp.alias_(renderer.weight(term), WEIGHT, quoted=True))
        if term.filters:
            part = part.where(exp.and_(*(f.copy() for f in term.filters)))
        parts.append(part)
    union = union_all(parts)
    bracket = exp.alias_(exp.Subquery(this=union), BRACKET, table=True, quoted=True)
    select = (
        exp.Select()
        .from_(renderer.source(0, NEW))
        .join(bracket, on=moved(step_one.on), join_type="inner")
    )
    for name, node in projections:
        select = select.select(exp.alias_(moved(node), name, quoted=True))
    select = select.select(exp.alias_(col(WEIGHT, BRACKET), WEIGHT, quoted=True))
    if query.where is not None:
        select = select.where(moved(query.where))
    return select


def brackets(select: exp.Expression) -> list[exp.Subquery]:
    """The factored terms' brackets in a rendered delta, each a subquery aliased BRACKET."""
    return [q for q in select.find_all(exp.Subquery) if q.alias == BRACKET]


def with_bracket_read_from(bracket: exp.Subquery, relation: exp.Table, rows: int) -> None:
    """Replace a bracket by a relation holding its `rows` rows (in place); a bracket of at
    most BROADCAST_ROWS rows is broadcast into the join with the first input.

    Spark's planner estimates a join inside the bracket as the product of its sides' sizes
    (no statistics-based estimate without CBO), and a computed scratch relation keeps the
    estimate of its query: so a bracket of a few thousand changed dimension rows looks
    large, and the whole first input was shuffled for a join that Spark's adaptive execution
    then turned into a broadcast anyway (bench/profile.py, SF 1: the 1.5M orders of
    `nation_segments` and the 6M line items of `nation_revenue`). The runner counts the
    bracket, so the hint is only given where a broadcast is small."""
    select = bracket.parent
    while select is not None and not isinstance(select, exp.Select):
        select = select.parent
    bracket.replace(exp.alias_(relation, BRACKET, table=True, quoted=True))
    if select is not None and rows <= BROADCAST_ROWS:
        hint = exp.JoinHint(this="BROADCAST", expressions=[exp.to_table(BRACKET, quoted=True)])
        select.set("hint", exp.Hint(expressions=[hint]))
