"""passes: the rewrites of a state's delta terms, in the order they apply, written as data.

A state's delta is a sum of terms, one per changed input of its join chain (`delta.py`). Before
they are rendered, the optimisations rewrite that sum without changing its value, each pass
taking the terms and what the refresh knows (the query, its key links, the key ranges its
logs touch) and returning the terms to render:

    terms  ->  factored terms (`factored.py`)  ->  key pruning (`pruning.py`)  ->  SQL

The order matters: factoring decides from the key ranges whether a chain's first input is read
unpruned by two or more terms, and takes those terms out of the sum (they become one join of
that input with a bracket, which applies its own key filters); pruning then adds the key
filters to the terms left. The model-level rewrite, an auxiliary state (`aux_state.py`), is
chosen before planning, from the inputs' sizes, as a different dataflow (`dataflow.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.ir import KeyRange, Query
from dbt.adapters.spark_ivm.compiler.operators.delta import Term
from dbt.adapters.spark_ivm.compiler.optimize import factored
from dbt.adapters.spark_ivm.compiler.optimize.pruning import KeyLink, prune_terms


@dataclass(frozen=True)
class DeltaTerms:
    """The terms a refresh renders one by one (`plain`), and those it renders as one join of
    the chain's first input with a bracket of the rest (`factored`)."""

    plain: tuple[Term, ...]
    factored: tuple[Term, ...] = ()


@dataclass(frozen=True)
class Known:
    """What the passes read: the state's query, its key links, the key ranges of the changed
    inputs' logs (None: none computed) and the columns the delta projects."""

    query: Query
    links: Sequence[KeyLink]
    ranges: Mapping[tuple[int, str], KeyRange] | None
    projections: Sequence[tuple[str, exp.Expression]]


#: A rewrite of the delta's terms, exact: the rendered sum has the same rows.
TermPass = Callable[[DeltaTerms, Known], DeltaTerms]


def factor(terms: DeltaTerms, known: Known) -> DeltaTerms:
    """The terms that read the chain's first input at the new version, where two or more do
    and factoring pays, moved to `factored` (`factored.split`)."""
    found = factored.split(terms.plain, known.query, known.links, known.ranges, known.projections)
    return DeltaTerms(tuple(found.plain), (*terms.factored, *found.factored))


def prune(terms: DeltaTerms, known: Known) -> DeltaTerms:
    """Each plain term with the key filters of its delta input's links (`pruning.py`)."""
    if not known.ranges:
        return terms
    pruned = prune_terms(terms.plain, known.query, known.links, known.ranges)
    return replace(terms, plain=tuple(pruned))


#: The passes, in the order they apply (see the module docstring for why this order).
TERM_PASSES: tuple[TermPass, ...] = (factor, prune)


def optimised(terms: Sequence[Term], known: Known) -> DeltaTerms:
    """`terms` after each of `TERM_PASSES` in turn.

    >>> from dbt.adapters.spark_ivm.compiler.frontend.analyze import analyze
    >>> from dbt.adapters.spark_ivm.compiler.operators import delta, join
    >>> from dbt.adapters.spark_ivm.compiler.optimize.pruning import key_links
    >>> q = analyze("select o.k, c.j from o join c on o.k = c.k", "m",
    ...             {"db.o": [("k", "int")], "db.c": [("k", "int"), ("j", "int")]}, "db")
    >>> both = delta.TermRenderer(q, lambda i, v: exp.to_table(f"{v}_{i}"), frozenset({0, 1}))
    >>> o_keys = {(0, "k"): KeyRange("1", "4", None)}  # the keys o's log touches
    >>> out = optimised(join.join_delta_terms(both), Known(q, key_links(q), o_keys, []))
    >>> [len(t.filters) for t in out.plain], out.factored  # o's term reads c where k in 1..4
    ([1, 0], ())
    """
    out = DeltaTerms(tuple(terms))
    for rewrite in TERM_PASSES:
        out = rewrite(out, known)
    return out
