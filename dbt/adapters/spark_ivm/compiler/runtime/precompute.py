"""precompute: parts of a refresh's delta computed before it, each read by name.

A rendered delta holds sub-expressions that are cheaper computed once than planned and run
where they stand: the brackets of factored terms (`optimize/factored.py`: counted, so a
small one is broadcast) and the affected keys of outer steps (`optimize/shared_keys.py`:
read by every padded term). Each becomes a scratch relation of the run's `Session`.
"""

from __future__ import annotations

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.optimize import factored, shared_keys
from dbt.adapters.spark_ivm.compiler.runtime.session import Session, Target
from dbt.adapters.spark_ivm.compiler.sql.templates import table


def precompute(session: Session, target: Target, delta: exp.Expression) -> None:
    """Compute the shared keys (innermost first) and the brackets of `delta`, rewriting it
    in place to read them."""
    computed = 0
    while found := shared_keys.innermost(delta):
        for copies in found:
            name = target.keys(computed)
            computed += 1
            session.compute_scratch("keys", name, copies[0].this)
            shared_keys.read_from(copies, table(name))
    for n, bracket in enumerate(factored.brackets(delta)):
        name = target.bracket(n)
        session.compute_scratch("bracket", name, bracket.this)
        rows = session.count_rows("bracket", name)
        factored.with_bracket_read_from(bracket, table(name), rows)
