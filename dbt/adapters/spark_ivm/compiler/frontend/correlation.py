"""correlation: how a sub-query refers to its outer row, split for a join.

A correlated sub-query (`EXISTS`, `IN`, a scalar sub-query) becomes a join with a state of
its own (`semi_join.py`, `scalar.py`) when every condition that mentions the outer row is an
equality of an inner expression and an outer one:

    WHERE i.k = o.k AND i.day = o.day + 1 AND i.x > 0
    -> keys [i.k, i.day] (kept by the state), links [o.k, o.day + 1] (joined to them),
       local [i.x > 0] (filters the state's input)

Any other condition on the outer row (`i.k < o.k`, `i.x = o.x OR ..`) cannot be joined by
key, and is refused by name.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.errors import UnsupportedQueryError, fragment
from dbt.adapters.spark_ivm.compiler.sql.templates import aliases, conjuncts


@dataclass(frozen=True)
class Correlation:
    """A sub-query's WHERE split into join keys, the outer expressions they equal, and the
    conditions on its own rows only."""

    keys: list[exp.Expression]
    links: list[exp.Expression]
    local: list[exp.Expression]


def own_aliases(inner: exp.Select) -> set[str]:
    """The aliases of a SELECT's own inputs (none without FROM)."""
    if inner.args.get("from_") is None:
        return set()
    sources = [inner.args["from_"].this, *(j.this for j in inner.args.get("joins") or [])]
    return {s.alias_or_name for s in sources}


def aggregates(inner: exp.Select) -> bool:
    """Does the SELECT group or aggregate in its own clauses (not in a sub-query of it)?"""
    if inner.args.get("group") or inner.args.get("having"):
        return True
    return any(a.find_ancestor(exp.Select) is inner for a in inner.find_all(exp.AggFunc))


def key_pair(
    conjunct: exp.Expression, own: set[str]
) -> tuple[exp.Expression, exp.Expression] | None:
    """(inner, outer) of an equality of an inner expression and an outer one, else None."""
    if not isinstance(conjunct, exp.EQ):
        return None
    for inside, outside in (
        (conjunct.this, conjunct.expression),
        (conjunct.expression, conjunct.this),
    ):
        a, b = aliases(inside), aliases(outside)
        if a and a <= own and b and not b & own:
            return inside, outside
    return None


def beyond_keys(found: list[exp.Expression], own: set[str]) -> list[exp.Expression]:
    """The conjuncts that read the outer row and are not a key equality (what `split`
    refuses; `inequality.py` and `theta_semi_join.py` maintain some of them)."""
    return [c for c in found if not aliases(c) <= own and key_pair(c, own) is None]


def split(inner: exp.Select, model: str, where_in: str) -> Correlation:
    """Split `inner`'s WHERE; `where_in` names the construct in a refusal."""
    own = own_aliases(inner)
    keys: list[exp.Expression] = []
    links: list[exp.Expression] = []
    local: list[exp.Expression] = []
    where = inner.args.get("where")
    for conjunct in conjuncts(where.this if where is not None else None):
        if aliases(conjunct) <= own:
            local.append(conjunct)
            continue
        pair = key_pair(conjunct, own)
        if pair is not None:
            keys.append(pair[0])
            links.append(pair[1])
            continue
        raise UnsupportedQueryError(
            model,
            f"a correlated condition other than an equality of inner and outer columns in "
            f"{where_in}",
            fragment(conjunct),
        )
    return Correlation(keys, links, local)
