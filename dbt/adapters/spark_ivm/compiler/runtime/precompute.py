"""precompute: parts of a refresh's delta computed before it, each read by name.

A rendered delta reads relations cheaper computed once than planned and run where they
stand: the affected keys of outer steps whose delta terms join inputs (`outer_join.py`:
`TermRenderer.shared`, named by placeholders), and the brackets of factored terms
(`optimize/factored.py`: counted, so a small one is broadcast). Each becomes a scratch
relation of the run's `Session`, and the delta reads it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.operators.delta import TermRenderer
from dbt.adapters.spark_ivm.compiler.optimize import factored
from dbt.adapters.spark_ivm.compiler.relations import Target
from dbt.adapters.spark_ivm.compiler.runtime.session import Session
from dbt.adapters.spark_ivm.compiler.sql.templates import table


def _names(node: exp.Expression) -> set[str]:
    return {t.name for t in node.find_all(exp.Table) if not t.args.get("db")}


def read_by_name(node: exp.Expression, renamed: Mapping[str, str]) -> exp.Expression:
    """`node` with its placeholder relations read from the names they were computed into
    (in place).

    >>> q = exp.select("*").from_("p1").join(exp.to_table("t"), on="TRUE")
    >>> read_by_name(q, {"p1": "k0"}).sql()
    'SELECT * FROM k0 JOIN t ON TRUE'
    """
    for found in node.find_all(exp.Table):
        if not found.args.get("db") and found.name in renamed:
            found.set("this", exp.to_identifier(renamed[found.name]))
    return node


def shared_order(
    delta: exp.Expression, renderers: Sequence[TermRenderer]
) -> list[tuple[str, exp.Expression]]:
    """The shared relations `delta` reads, directly or through another, as (placeholder,
    body) in an order that computes each after those it reads."""
    bodies: dict[str, exp.Expression] = {}
    for renderer in renderers:
        for name, body in renderer.shared.items():
            bodies.setdefault(name, body)
    needed = _names(delta) & bodies.keys()
    for name in reversed(list(bodies)):  # a body reads only bodies named before it
        if name in needed:
            needed |= _names(bodies[name]) & bodies.keys()
    return [(name, body) for name, body in bodies.items() if name in needed]


def precompute(
    session: Session, target: Target, delta: exp.Expression, renderers: Sequence[TermRenderer]
) -> None:
    """Compute the shared keys and the brackets `delta` reads, rewriting it in place to read
    them."""
    renamed: dict[str, str] = {}
    for placeholder, body in shared_order(delta, renderers):
        name = target.keys(len(renamed))
        # Computed by the first statement that reads them (the delta, or a later key set).
        session.compute_scratch("keys", name, read_by_name(body.copy(), renamed), eager=False)
        renamed[placeholder] = name
    read_by_name(delta, renamed)
    for n, bracket in enumerate(factored.brackets(delta)):
        name = target.bracket(n)
        rows = session.compute_counted("bracket", name, bracket.this)
        factored.with_bracket_read_from(bracket, table(name), rows)
