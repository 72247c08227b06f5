"""semi_join: EXISTS, NOT EXISTS and IN (sub-query) in WHERE, as joins with a DISTINCT state.

A semi join keeps an outer row while the sub-query has a matching row; its match count is
what must be maintained, and a DISTINCT sub-query of the correlation keys has a row exactly
while that count is positive. So, for a top-level conjunct of WHERE:

    EXISTS (SELECT .. FROM i WHERE i.k = o.k AND p)
        == JOIN (SELECT DISTINCT i.k AS k0 FROM i WHERE p) ivm_semi0 ON ivm_semi0.k0 = o.k
    NOT EXISTS (..)
        == LEFT JOIN (same) ivm_semi0 ON ivm_semi0.k0 = o.k   with   ivm_semi0.k0 IS NULL
    o.x IN (SELECT i.y FROM i WHERE p)
        == EXISTS (SELECT 1 FROM i WHERE p AND i.y = o.x)

The DISTINCT sub-query has at most one row per key, so the join neither repeats nor drops an
outer row; a NULL key matches nothing on either side, as in the sub-query. An uncorrelated
EXISTS joins a one-column DISTINCT of the constant 1 (one row if the sub-query has any).
`IN` equals that EXISTS in WHERE, where NULL and FALSE both drop the row. The DISTINCT
sub-query is kept as a state of its own (`stages.py`), so a change on either side costs a
delta, not a re-evaluation.

    select o.id from db.orders o where exists (select 1 from db.refunds r where r.oid = o.id)
    -> select o.id from db.orders o
       join (select distinct r.oid as k0 from db.refunds r) ivm_semi0 on ivm_semi0.k0 = o.id

NOT IN keeps SQL's NULL semantics: `x NOT IN S` is TRUE when S is empty, and otherwise only
when x is not NULL, no row of S equals x and no row of S is NULL (else it is FALSE or NULL,
and WHERE drops the row either way). Both facts are kept by states: the DISTINCT state of
`y` (LEFT JOIN, as for NOT EXISTS) says whether x is matched, and one aggregate per outer row
(`scalar.py`: cross join when uncorrelated, LEFT JOIN by the correlation keys otherwise),

    f = coalesce((SELECT max(CASE WHEN y IS NULL THEN 2 ELSE 1 END) FROM i WHERE w), 0)

is 0 for an empty S, 1 without NULLs, 2 with one. The conjunct becomes

    x NOT IN (SELECT y FROM i WHERE w)
        == (CASE WHEN x IS NOT NULL AND ivm_semi0.k0 IS NULL THEN 1 ELSE 0 END) >= f

Example: x = 3, S = {1, NULL}: f = 2, left side 1: dropped (3 NOT IN (1, NULL) is NULL).

A sub-query that groups (TPC-H Q18: `o_orderkey IN (SELECT l_orderkey .. GROUP BY
l_orderkey HAVING sum(l_quantity) > 300)`) is a derived table first, a state of its own,
its correlation keys added to its GROUP BY and joined outside it (`_lifted`); the DISTINCT
state then reads it. An EXISTS correlated by equalities and one comparison (`<>`, `<`, ..)
is a test of a MIN or MAX per key instead (`inequality.py`); by equalities and more
comparisons, a DISTINCT state of the outer values that match (`theta_semi_join.py`).

Refused by name: a sub-query test under OR or in the select list, a correlation with no
equality, a correlated sub-query over an ungrouped aggregate.
"""

from __future__ import annotations

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.errors import UnsupportedQueryError
from dbt.adapters.spark_ivm.compiler.errors import fragment as _fragment
from dbt.adapters.spark_ivm.compiler.frontend import correlation, inequality, theta_semi_join
from dbt.adapters.spark_ivm.compiler.sql.templates import conjuncts

ALIAS = "ivm_semi"
#: The derived table of a grouped sub-query under EXISTS / IN (`_lifted`).
GROUPED = "ivm_grouped"


def has_subquery_test(select: exp.Select) -> bool:
    """Does the SELECT (or one inside it) test a sub-query with EXISTS or IN?"""
    return any(
        isinstance(n, exp.Exists) or (isinstance(n, exp.In) and n.args.get("query"))
        for n in select.find_all(exp.Exists, exp.In)
    )


def _is_text(dtype: exp.DataType) -> bool:
    return dtype.is_type(*exp.DataType.TEXT_TYPES)


def _as_compared(test: exp.In, value: exp.Expression, model: str) -> exp.EQ:
    """The equality `y = x` that matches as `x IN (SELECT y ..)` does.

    Spark's IN casts both sides to their wider common type, which is STRING when one side is
    a string and the other is not; an equality casts the string to the other type instead:
    `'1.0' IN (SELECT 1)` is false, `'1.0' = 1` true. So a string compared with another type
    is compared as strings, `CAST(y AS STRING) = CAST(x AS STRING)`; other pairs (numbers of
    two types, date and timestamp) meet at the same type either way. The types come from
    `annotate` (sqlglot's inference over the base tables' Spark types); a side whose type it
    cannot tell is refused rather than guessed.
    """
    x = test.this
    types = [x.type, value.type]
    if any(t is None or t.is_type(exp.DataType.Type.UNKNOWN) for t in types):
        raise UnsupportedQueryError(
            model,
            "IN / NOT IN with a sub-query whose compared types cannot be told (a string "
            "compared with another type matches as text in IN, not in a join)",
            _fragment(test),
            "Cast both sides of the IN to one type.",
        )
    left, right = value.copy(), x.copy()
    if _is_text(types[0]) != _is_text(types[1]):
        left, right = exp.cast(left, "string"), exp.cast(right, "string")
    return exp.EQ(this=left, expression=right)


def _as_exists(test: exp.In, model: str) -> exp.Exists:
    """`x IN (SELECT y FROM .. WHERE p)` as `EXISTS (SELECT 1 FROM .. WHERE p AND y = x)`
    (`y = x` as IN compares them, `_as_compared`)."""
    query = test.args["query"]
    inner = query.this if isinstance(query, exp.Subquery) else query
    if not isinstance(inner, exp.Select):
        raise UnsupportedQueryError(model, "IN over a sub-query that is not one SELECT (a UNION)",
                                    _fragment(test))  # fmt: skip
    if len(inner.expressions) != 1:
        raise UnsupportedQueryError(model, "IN with a sub-query of more than one column",
                                    _fragment(test))  # fmt: skip
    if inner.args.get("limit") or inner.args.get("offset"):
        raise UnsupportedQueryError(
            model, "IN with a sub-query that has LIMIT or OFFSET (only some of its rows count)",
            _fragment(test),
        )  # fmt: skip
    equality = _as_compared(test, inner.expressions[0].unalias(), model)
    if correlation.aggregates(inner):
        lifted = _lifted(inner, model, test)
        column = exp.column("c", table=GROUPED)
        compared = equality.this.this if isinstance(equality.this, exp.Cast) else equality.this
        compared.replace(column)
        lifted.where(equality, copy=False)
        return exp.Exists(this=lifted)
    inner = inner.copy()
    inner.set("expressions", [exp.Literal.number(1)])
    inner.where(equality, copy=False)
    return exp.Exists(this=inner)


def _lifted(inner: exp.Select, model: str, test: exp.Expression) -> exp.Select:
    """`SELECT 1 FROM (<inner, its correlation keys grouped>) g WHERE g.k = o.k ..`: the
    grouped sub-query as a derived table (a state of its own, `stages.py`), its correlation
    applied outside it.

    Filtering by `k = o.k` and then grouping by G gives the groups of (k, G) whose k is o.k,
    so the correlation keys join the GROUP BY and the filter moves out; the first projection
    is kept as `c` (what IN compares). An ungrouped aggregate is one row even over no rows,
    which a grouping by the keys would not give: correlated, it is refused."""
    found = correlation.split(inner, model, "EXISTS / IN")
    group = inner.args.get("group")
    if found.keys and group is None:
        raise UnsupportedQueryError(
            model,
            "a correlated EXISTS / IN over an ungrouped aggregate (one row even where no row "
            "matches)",
            _fragment(test),
        )
    derived = inner.copy()
    derived.set("where", exp.Where(this=exp.and_(*found.local)) if found.local else None)
    derived.set("order", None)
    grouped = list(group.expressions) if group is not None else []
    for key in found.keys:
        if not any(key == g for g in grouped):
            grouped.append(key.copy())
    if grouped:
        derived.set("group", exp.Group(expressions=grouped))
    value = inner.expressions[0].unalias().copy()
    derived.set(
        "expressions",
        [
            exp.alias_(value, "c"),
            *(exp.alias_(k.copy(), f"k{i}") for i, k in enumerate(found.keys)),
        ],
    )
    alias = exp.TableAlias(this=exp.to_identifier(GROUPED))
    lifted = exp.select("1").from_(exp.Subquery(this=derived, alias=alias))
    for i, link in enumerate(found.links):
        lifted.where(exp.EQ(this=exp.column(f"k{i}", table=GROUPED), expression=link.copy()),
                     copy=False)  # fmt: skip
    return lifted


def _at_least_one(limit: exp.Limit) -> bool:
    """Is the LIMIT a literal count of at least one row?"""
    count = limit.expression
    return (
        isinstance(count, exp.Literal)
        and not count.is_string
        and count.this.isdigit()
        and (int(count.this) >= 1)
    )


def _semi_join(
    exists: exp.Exists, number: int, model: str
) -> tuple[exp.Subquery, list[exp.Expression]]:
    """The DISTINCT sub-query of an EXISTS and the equalities joining it to the outer row."""
    inner = exists.this
    inner = inner.this if isinstance(inner, exp.Subquery) else inner
    if not isinstance(inner, exp.Select) or inner.args.get("from_") is None:
        raise UnsupportedQueryError(model, "this EXISTS sub-query", _fragment(exists))
    if correlation.aggregates(inner):
        inner = _lifted(inner, model, exists)
    limit = inner.args.get("limit")
    if inner.args.get("offset") or (limit is not None and not _at_least_one(limit)):
        # `LIMIT 1` (k >= 1) keeps EXISTS as it is; LIMIT 0 or an OFFSET do not.
        raise UnsupportedQueryError(
            model, "EXISTS over a sub-query with OFFSET or LIMIT 0", _fragment(exists)
        )
    found = correlation.split(inner, model, "EXISTS / IN")
    keys, links, local = found.keys, found.links, found.local
    name = f"{ALIAS}{number}"
    distinct = inner.copy()
    projections = keys or [exp.Literal.number(1)]
    distinct.set("expressions", [exp.alias_(k.copy(), f"k{i}") for i, k in enumerate(projections)])
    distinct.set("distinct", exp.Distinct())
    distinct.set("where", exp.Where(this=exp.and_(*local)) if local else None)
    distinct.set("order", None)
    distinct.set("limit", None)
    subquery = exp.Subquery(this=distinct, alias=exp.TableAlias(this=exp.to_identifier(name)))
    on = [
        exp.EQ(this=exp.column(f"k{i}", table=name), expression=link.copy())
        for i, link in enumerate(links)
    ]
    return subquery, on


def _not_in(test: exp.In, number: int, model: str) -> tuple[exp.Expression, exp.Join]:
    """The condition replacing `x NOT IN (SELECT y ..)` and the LEFT JOIN of the DISTINCT
    state it reads (see the module: `unmatched >= f`)."""
    exists = _as_exists(test, model)  # refuses a sub-query of more than one column
    subquery, on = _semi_join(exists, number, model)
    query = test.args["query"]
    inner = (query.this if isinstance(query, exp.Subquery) else query).copy()
    y = inner.expressions[0].unalias()
    null_flag = exp.Case(
        ifs=[exp.If(this=exp.Is(this=y.copy(), expression=exp.null()), true=exp.Literal.number(2))],
        default=exp.Literal.number(1),
    )
    inner.set("expressions", [exp.Max(this=null_flag)])
    for arg in ("distinct", "order", "limit"):
        inner.set(arg, None)
    flag = exp.func("coalesce", exp.Subquery(this=inner), exp.Literal.number(0))
    unmatched = exp.and_(
        exp.Not(this=exp.Is(this=test.this.copy(), expression=exp.null())),
        exp.Is(this=exp.column("k0", table=f"{ALIAS}{number}"), expression=exp.null()),
    )
    kept = exp.Case(ifs=[exp.If(this=unmatched, true=exp.Literal.number(1))],
                    default=exp.Literal.number(0))  # fmt: skip
    condition = exp.GTE(this=kept, expression=flag)
    if not on:
        # `5 NOT IN (SELECT y ..)` reads no column of the outer row: whether 5 is in the
        # sub-query is one row for every outer row, MAX(1) (NULL when it is not), joined
        # as an inner join like a scalar sub-query (outer joins are maintained per key)
        state = subquery.this
        state.set("distinct", None)
        state.set("expressions", [exp.alias_(exp.Max(this=exp.Literal.number(1)), "k0")])
        return condition, exp.Join(this=subquery, on=exp.true())
    return condition, exp.Join(this=subquery, side="LEFT", on=exp.and_(*on))


def rewrite(select: exp.Select, model: str) -> None:
    """Replace the EXISTS / NOT EXISTS / IN conjuncts of `select`'s WHERE by joins (in place);
    refuse every other place a sub-query test appears.

    >>> import sqlglot
    >>> s = sqlglot.parse_one("select c.id from db.c c where exists "
    ...                       "(select 1 from db.o o where o.cust = c.id)", dialect="spark")
    >>> rewrite(s, "m")
    >>> print(s.sql("spark").replace(" JOIN", "\\nJOIN"))
    SELECT c.id FROM db.c AS c
    JOIN (SELECT DISTINCT o.cust AS k0 FROM db.o AS o) AS ivm_semi0 ON ivm_semi0.k0 = c.id
    """
    where = select.args.get("where")
    kept: list[exp.Expression] = []
    joins: list[exp.Join] = []
    tested = False  # an EXISTS became a scalar test (`inequality.py`)
    number = len([s for s in select.find_all(exp.Subquery) if str(s.alias).startswith(ALIAS)])
    for conjunct in conjuncts(where.this if where is not None else None):
        negated = isinstance(conjunct, exp.Not)
        test = conjunct.this if negated else conjunct
        if isinstance(test, exp.Paren):
            test = test.this
        if isinstance(test, exp.In) and test.args.get("query"):
            if negated:
                condition, join = _not_in(test, number, model)
                kept.append(condition)
                joins.append(join)
                number += 1
                continue
            test = _as_exists(test, model)
        if not isinstance(test, exp.Exists):
            kept.append(conjunct)
            continue
        compared = inequality.as_scalar_test(test)
        if compared is not None:
            kept.append(exp.Not(this=compared) if negated else compared)
            tested = True
            continue
        if theta_semi_join.wanted(test):
            subquery, joined = theta_semi_join.semi_state(test, select, number, model)
            on = [joined]
        else:
            subquery, on = _semi_join(test, number, model)
        condition = exp.and_(*on) if on else exp.true()
        if negated and not on:
            raise UnsupportedQueryError(
                model, "NOT EXISTS without a correlation (an equality with the outer row)",
                _fragment(conjunct),
            )  # fmt: skip
        if negated:
            joins.append(exp.Join(this=subquery, side="LEFT", on=condition))
            unmatched = exp.Is(
                this=exp.column("k0", table=f"{ALIAS}{number}"), expression=exp.null()
            )
            kept.append(unmatched)
        else:
            joins.append(exp.Join(this=subquery, on=condition))
        number += 1
    if not joins and not tested:
        return
    select.set("joins", [*(select.args.get("joins") or []), *joins])
    select.set("where", exp.Where(this=exp.and_(*kept)) if kept else None)


def check_no_other_tests(select: exp.Select, model: str) -> None:
    """After `rewrite`: any sub-query test left (under OR, in the select list) is refused."""
    for node in select.find_all(exp.Exists, exp.In):
        if isinstance(node, exp.Exists) or node.args.get("query"):
            raise UnsupportedQueryError(
                model,
                "a sub-query test (EXISTS / IN) that is not a conjunct of WHERE (under OR or "
                "NOT, or in the select list)",
                _fragment(node.parent or node),
            )
