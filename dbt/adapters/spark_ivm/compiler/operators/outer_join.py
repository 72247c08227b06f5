"""Outer joins: Oracle's fast-refresh algorithm for outer-join views, in counting form.

For L LEFT JOIN S ON (l = s AND residual), the view is the inner join plus one NULL-padded
row for every L row without a match (the anti join L |> S):

    L LEFT JOIN S  =  (L JOIN S)  +  pad(L |> S)
    d(L LEFT JOIN S) = d(L JOIN S)  +  pad( (L_new |> S_new)|K  -  (L_old |> S_old)|K )

where K, the affected join keys, is the set of key values l of the rows in dL and of the key
values s of the rows in dS. Only an L row whose key is in K can gain or lose its last match
(its own row changed, or a row of S with its key did), so restricting both anti joins to K
gives the exact change of the padded rows: +1 when an outer row loses its last match (Oracle's
DEL.upd), -1 when a padded outer row gains its first match (INS.del); rows of one outer slice
that keep a match cancel out. Keys are compared null-safely when restricting to K, so a
changed L row with a NULL key (which never matches) is still seen.

Example: L = {(1,'a')}, S = {(1,'x')}; delete (1,'x') from S. K = {1}.
    (L_new |> S_new)|K = {(1,'a')}  -> +1 (1,'a',NULL)
    (L_old |> S_old)|K = {}         -> nothing;
and the inner part gives -1 (1,'a','x'): the view goes from (1,a,x) to (1,a,NULL).

RIGHT JOIN mirrors this (the new input S is preserved); FULL JOIN applies both.

K is read four times (the filter on L and S's slice, at both versions). Where its delta terms
join inputs, it is one relation computed once before the delta (`TermRenderer.shared`,
computed by `runtime/precompute.py`) and read by name:

    K_j = keys(d(N_(j-1)))         -- computed once, in step order
    pad_j(..)|K_j reads K_j         -- every copy is the relation

Inline, behind a second outer step K holds the first step's padded terms with their own K
copies, so the statement grew about fourfold per outer step: three LEFT JOINs to sub-query
states rendered a 169 KB statement of 1505 SELECTs that Spark took 44 s to plan for ten
rows, and sqlglot seconds to render. The relation holds the same rows at the same pinned
versions, so the result is the same. K of change logs alone (one LEFT JOIN of two tables)
stays inline: reading a computed log four times costs less than one more Spark job.

When S changed, both anti joins read one relation, S|K counted at both versions (`counted`):

    M = SELECT cols, SUM(n_new), SUM(n_old)
        FROM (S_new|K with n_new = n_old = 1  UNION ALL  dS with n_new = 0, n_old = -w)
        GROUP BY cols

over the columns of S the ON clause reads. Since S_old = S_new - dS, n_old counts the rows
of S_old and n_new those of S_new with those columns, so "no match at version v" is
`NOT EXISTS (SELECT 1 FROM M WHERE on AND n_v > 0)`. Both anti joins then share M's scan and
shuffle (Spark reuses the identical exchange) instead of reading S at two versions.
Example: dS = {-(1,'x')}, S_new|K = {}: M = {(1,'x'): n_new 0, n_old 1}.
"""

from __future__ import annotations

import itertools

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.errors import UnsupportedQueryError
from dbt.adapters.spark_ivm.compiler.ir import JoinKind, JoinStep, Query
from dbt.adapters.spark_ivm.compiler.operators.delta import (
    DELTA,
    NEW,
    OLD,
    WEIGHT,
    Leaf,
    Prefix,
    Term,
    TermRenderer,
    Version,
)
from dbt.adapters.spark_ivm.compiler.sql.templates import (
    aliases,
    col,
    conjuncts,
    null_safe_match,
    union_all,
)

KEYS = "__ivm_keys"
#: The placeholder name of affected keys computed once (`TermRenderer.shared`).
SHARED_KEYS = "__ivm_shared_keys_"
_PLACEHOLDERS = itertools.count()


def equi_keys(query: Query, step: JoinStep) -> tuple[list[exp.Expression], list[exp.Expression]]:
    """The equality conjuncts `l = s` of the ON clause: (left expressions, right expressions).
    Checked when the model is planned, so a model that builds also refreshes.

    >>> # ON c.id = o.customer_id AND o.status = 'open'  ->  ([c.id], [o.customer_id])
    """
    left = {query.inputs[i].alias for i in range(step.index)}
    right = {query.inputs[step.index].alias}
    lefts: list[exp.Expression] = []
    rights: list[exp.Expression] = []
    for conjunct in conjuncts(step.on):
        if not isinstance(conjunct, exp.EQ):
            continue
        a, b = conjunct.this, conjunct.expression
        sa, sb = aliases(a), aliases(b)
        if sa and sb and sa <= left and sb <= right:
            lefts.append(a)
            rights.append(b)
        elif sa and sb and sb <= left and sa <= right:
            lefts.append(b)
            rights.append(a)
    if not lefts:
        raise UnsupportedQueryError(
            query.model,
            f"{step.kind.value.upper()} JOIN without an equality between its two sides",
            step.on.sql(dialect="spark"),
            "Outer joins are maintained per join key: add an equality such as a.id = b.a_id.",
        )
    return lefts, rights


def _affected_keys(
    renderer: TermRenderer,
    step: JoinStep,
    left_terms: list[Term],
    lefts: list[exp.Expression],
    rights: list[exp.Expression],
) -> exp.Expression:
    """K: the key values of the left side's delta rows and of the new input's delta rows."""
    names = [f"c{i}" for i in range(len(lefts))]
    parts: list[exp.Expression] = [
        renderer.render(t, list(zip(names, lefts)), with_weight=False, with_where=False)
        for t in left_terms
    ]
    if step.index in renderer.changed:
        parts.append(
            renderer.render(
                Term(base=Leaf(step.index, DELTA)),
                list(zip(names, rights)),
                with_weight=False,
                with_where=False,
            )
        )
    union = union_all(parts)
    if not any(union.find_all(exp.Join)):
        return union
    name = f"{SHARED_KEYS}{next(_PLACEHOLDERS)}"  # unique in the process: renderers share none
    renderer.shared[name] = union
    return exp.select("*").from_(exp.Table(this=exp.to_identifier(name)))


def _in_keys(keys: exp.Expression, exprs: list[exp.Expression]) -> exp.Expression:
    names = [col(f"c{i}", KEYS) for i in range(len(exprs))]
    sub = (
        exp.Select()
        .select(exp.Literal.number(1))
        .from_(exp.alias_(exp.Subquery(this=keys.copy()), KEYS, table=True, quoted=True))
        .where(null_safe_match(names, exprs))
    )
    return exp.Exists(this=sub)


def _keyed_source(
    renderer: TermRenderer,
    index: int,
    version: Version,
    keys: exp.Expression,
    exprs: list[exp.Expression],
) -> exp.Expression:
    """Input `index` at `version` restricted to the affected keys K (its key expressions
    `exprs` null-safely in K), aliased as in the model.

    Only rows whose key is in K can match a padded candidate (whose own key is in K), so the
    anti join reads K's slice of the other side: Spark has no index, but the slice is
    filtered by a broadcast semi join before the anti join's shuffle, not after it.
    Example: customers c LEFT JOIN orders o ON o.cust = c.id, K = {7}: the NOT EXISTS reads
    `orders WHERE cust IN K` (a few rows), not all orders.
    """
    alias = renderer.query.inputs[index].alias
    inner = exp.Select().select(exp.Star()).from_(renderer.source(index, version))
    inner = inner.where(_in_keys(keys, exprs))
    return exp.alias_(exp.Subquery(this=inner), alias, table=True, quoted=True)


COUNTS = {NEW: "__ivm_n_new", OLD: "__ivm_n_old"}

#: Types whose GROUP BY keeps every value apart as `=` and the ON clause would see it (floats
#: are normalised: -0.0 joins 0.0 and every NaN one group, which a function of them may tell).
_EXACT_TYPES = (
    "tinyint", "smallint", "int", "integer", "bigint", "string", "varchar", "char",
    "date", "timestamp", "timestamp_ntz", "boolean", "binary", "decimal",
)  # fmt: skip


def _on_columns(renderer: TermRenderer, index: int, on: exp.Expression) -> list[str] | None:
    """The columns of input `index` that `on` reads, or None when M cannot stand for it (an
    unqualified column, or a type GROUP BY would merge values of)."""
    alias = renderer.query.inputs[index].alias
    types = dict(renderer.query.inputs[index].columns)
    names: list[str] = []
    for column in on.find_all(exp.Column):
        if not column.table:
            return None
        if column.table != alias:
            continue
        dtype = types.get(column.name, "").lower()
        if not dtype.startswith(_EXACT_TYPES):
            return None
        if column.name not in names:
            names.append(column.name)
    return names or None


def _counted_source(
    renderer: TermRenderer,
    index: int,
    keys: exp.Expression,
    exprs: list[exp.Expression],
    names: list[str],
) -> exp.Expression:
    """M of the module docstring for input `index`, aliased as in the model."""
    alias = renderer.query.inputs[index].alias
    cols = [exp.alias_(col(n, alias), n, quoted=True) for n in names]
    one = exp.Literal.number(1)
    new_rows = (
        exp.Select()
        .select(*cols, exp.alias_(one, COUNTS[NEW], quoted=True))
        .select(exp.alias_(one.copy(), COUNTS[OLD], quoted=True))
        .from_(renderer.source(index, NEW))
        .where(_in_keys(keys, exprs))
    )
    delta_rows = (
        exp.Select()
        .select(*(c.copy() for c in cols))
        .select(exp.alias_(exp.Literal.number(0), COUNTS[NEW], quoted=True))
        .select(exp.alias_(exp.Neg(this=col(WEIGHT, alias)), COUNTS[OLD], quoted=True))
        .from_(renderer.source(index, DELTA))
    )
    both = exp.union(new_rows, delta_rows, distinct=False)
    counted = (
        exp.Select()
        .select(*(col(n) for n in names))
        .select(*(exp.alias_(exp.func("SUM", col(c)), c, quoted=True) for c in COUNTS.values()))
        .from_(exp.alias_(exp.Subquery(this=both), "__ivm_both", table=True, quoted=True))
        .group_by(*(col(n) for n in names))
    )
    return exp.alias_(exp.Subquery(this=counted), alias, table=True, quoted=True)


def _no_match_source(
    renderer: TermRenderer,
    index: int,
    version: Version,
    keys: exp.Expression,
    exprs: list[exp.Expression],
    on: exp.Expression,
) -> exp.Select:
    """`SELECT 1 FROM <input index at version, K's slice> WHERE on`: the anti join's inside."""
    names = _on_columns(renderer, index, on) if index in renderer.changed else None
    if names is None:
        source = _keyed_source(renderer, index, version, keys, exprs)
        return exp.Select().select(exp.Literal.number(1)).from_(source).where(on.copy())
    alias = renderer.query.inputs[index].alias
    present = exp.GT(this=col(COUNTS[version], alias), expression=exp.Literal.number(0))
    # Always true (every group has a row), but it keeps both sums alive: without it Spark
    # prunes the unread sum and the two M's differ, so their exchange is not reused.
    other = next(c for v, c in COUNTS.items() if v != version)
    present = exp.and_(present, exp.Not(this=exp.Is(this=col(other, alias), expression=exp.null())))
    return (
        exp.Select()
        .select(exp.Literal.number(1))
        .from_(_counted_source(renderer, index, keys, exprs, names))
        .where(exp.and_(on.copy(), present))
    )


def outer_pad_terms(renderer: TermRenderer, step: JoinStep, left_terms: list[Term]) -> list[Term]:
    """The padded-row terms of d(N_(k-1) <outer> S_k) for step k (see the module docstring)."""
    k = step.index
    lefts, rights = equi_keys(renderer.query, step)
    keys = _affected_keys(renderer, step, left_terms, lefts, rights)
    terms: list[Term] = []
    for version, sign in ((NEW, 1), (OLD, -1)):
        if step.kind in (JoinKind.LEFT, JoinKind.FULL):
            # Rows of the chain so far with no match in S_k at this version.
            no_match = _no_match_source(renderer, k, version, keys, rights, step.on)
            terms.append(
                Term(
                    base=Prefix(k - 1, version),
                    padded=frozenset({k}),
                    filters=(_in_keys(keys, lefts), exp.Not(this=exp.Exists(this=no_match))),
                    sign=sign,
                )
            )
        if step.kind in (JoinKind.RIGHT, JoinKind.FULL):
            # Rows of S_k with no match in the chain so far at this version.
            if k == 1:
                # The chain so far is one input: read its slice of K, as for LEFT above.
                no_match = _no_match_source(renderer, 0, version, keys, lefts, step.on)
            else:
                no_match = renderer.prefix_from(k - 1, version).select(exp.Literal.number(1))
                no_match = no_match.where(step.on.copy())
            terms.append(
                Term(
                    base=Leaf(k, version),
                    padded=frozenset(range(k)),
                    filters=(_in_keys(keys, rights), exp.Not(this=exp.Exists(this=no_match))),
                    sign=sign,
                )
            )
    return terms
