"""join: the delta rule of a left-deep join chain, inner and outer steps alike.

For N_k = N_(k-1) op_k S_k, with inputs read at the versions pinned for this refresh:

    d(N_0) = dS_0
    d(N_k) = d(N_(k-1)) JOIN S_k_old  +  N_(k-1)_new JOIN dS_k          (inner part)
             + the padded rows of an outer step (`outer_join.py`)

Each term is a flat FROM of the model's own inputs and aliases (`delta.py`: `Term`,
`TermRenderer`), so the model's WHERE, ON and select list apply to it unchanged.

Example: all three inputs of an inner chain changed, one term per input:

>>> from sqlglot import exp
>>> from dbt.adapters.spark_ivm.compiler.frontend.analyze import analyze
>>> k = [("k", "int")]
>>> q = analyze("select a.k from a join b on a.k = b.k join c on b.k = c.k", "m",
...             {"db.a": k, "db.b": k, "db.c": k}, "db")
>>> renderer = TermRenderer(q, lambda i, v: exp.to_table(f"{v}_{q.inputs[i].alias}"),
...                         changed=frozenset({0, 1, 2}))
>>> for term in join_delta_terms(renderer):
...     print(" x ".join(f"{q.inputs[i].alias}@{v}" for i, v in sorted(term.versions.items())))
a@delta x b@old x c@old
a@new x b@delta x c@old
a@new x b@new x c@delta
"""

from __future__ import annotations

from dbt.adapters.spark_ivm.compiler.ir import JoinKind
from dbt.adapters.spark_ivm.compiler.operators.delta import (
    DELTA,
    NEW,
    OLD,
    Leaf,
    Prefix,
    Term,
    TermRenderer,
)
from dbt.adapters.spark_ivm.compiler.operators.outer_join import outer_pad_terms


def join_delta_terms(renderer: TermRenderer) -> list[Term]:
    """d(N_last) for the model's chain as a list of terms (see the module docstring)."""
    changed = renderer.changed
    terms: list[Term] = [Term(base=Leaf(0, DELTA))] if 0 in changed else []
    for step in renderer.query.steps:
        k = step.index
        inner = [t.with_join(k, OLD) for t in terms]
        if k in changed:
            inner.append(Term(base=Prefix(k - 1, NEW), joins=((k, DELTA),)))
        pads: list[Term] = []
        if step.kind is not JoinKind.INNER and (terms or k in changed):
            pads = outer_pad_terms(renderer, step, terms)
        terms = inner + pads
    return terms
