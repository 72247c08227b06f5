"""null_rejection: an outer join whose padded rows the WHERE removes pads less.

    SELECT .. FROM l LEFT JOIN s ON c WHERE w  ==  SELECT .. FROM l JOIN s ON c WHERE w

when one conjunct of `w` is never TRUE while every column of `s` is NULL (it rejects
NULLs of `s`): the LEFT JOIN adds to the inner join only rows whose `s` columns are all
NULL, and every row built from one (by later joins too) still has them NULL, so `w` drops
it. The same holds when the padded row matched or failed to match a later input: whatever
that input's rows are joined to, `s` stays NULL in them. Mirrored, a RIGHT JOIN whose WHERE
rejects NULLs of any input before it (its padded rows have them all NULL) is inner, and a
FULL JOIN drops each padding the WHERE rejects: LEFT when it rejects the right input, RIGHT
when one before it, inner when both.

An inner join needs no padded-row terms (`outer_join.py`), so its refresh reads no affected
keys and no anti joins: the sub-query rewrites (`scalar.py`, `inequality.py`) write LEFT
JOINs to their states and a WHERE that often rejects a missing state row (EXISTS, a
comparison with a scalar), and a hand-written `LEFT JOIN b .. WHERE b.x > 0` is the same
case.

Rejection is proven, never guessed: a comparison, arithmetic, CAST, CASE whose results are
all such expressions (`strict`: NULL when `s` is), conjunctions of which one rejects,
disjunctions and COALESCEs of which all do, `IS NOT NULL` of such an expression. Anything
else (a function not listed, IS NULL, `<=>`) keeps the padding.

>>> import sqlglot
>>> def simplified(text):
...     select = sqlglot.parse_one(text, read="spark")
...     simplify_outer_joins(select)
...     return select.sql(dialect="spark")
>>> simplified("SELECT * FROM l LEFT JOIN s ON s.k = l.k WHERE l.x < 0.5 * s.v + 1")
'SELECT * FROM l JOIN s ON s.k = l.k WHERE l.x < 0.5 * s.v + 1'
>>> simplified("SELECT * FROM l LEFT JOIN s ON s.k = l.k WHERE COALESCE(s.v <> l.x, FALSE)")
'SELECT * FROM l JOIN s ON s.k = l.k WHERE COALESCE(s.v <> l.x, FALSE)'
>>> simplified("SELECT * FROM l LEFT JOIN s ON s.k = l.k WHERE NOT COALESCE(s.v > l.x, FALSE)")
'SELECT * FROM l LEFT JOIN s ON s.k = l.k WHERE NOT COALESCE(s.v > l.x, FALSE)'
>>> simplified("SELECT * FROM l LEFT JOIN s ON s.k = l.k WHERE s.v IS NOT NULL")
'SELECT * FROM l JOIN s ON s.k = l.k WHERE NOT s.v IS NULL'
>>> simplified("SELECT * FROM l LEFT JOIN s ON s.k = l.k WHERE s.v > 0 OR l.x > 0")
'SELECT * FROM l LEFT JOIN s ON s.k = l.k WHERE s.v > 0 OR l.x > 0'
>>> simplified("SELECT * FROM l FULL JOIN s ON s.k = l.k WHERE s.v > 0")
'SELECT * FROM l RIGHT JOIN s ON s.k = l.k WHERE s.v > 0'
>>> simplified("SELECT * FROM l JOIN m ON m.k = l.k RIGHT JOIN s ON s.k = l.k WHERE m.v > 0")
'SELECT * FROM l JOIN m ON m.k = l.k JOIN s ON s.k = l.k WHERE m.v > 0'
"""

from __future__ import annotations

from sqlglot import exp

#: NULL when either operand is NULL.
_EITHER: tuple[type[exp.Expression], ...] = (
    exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv,
    exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE,
)  # fmt: skip
#: NULL when their first operand (`this`) is NULL.
_FIRST: tuple[type[exp.Expression], ...] = (
    exp.Neg, exp.Not, exp.Paren, exp.Cast, exp.TryCast, exp.Dot, exp.Bracket, exp.Abs,
    exp.Upper, exp.Lower, exp.Length, exp.Round, exp.Floor, exp.Ceil, exp.Between, exp.Like,
)  # fmt: skip


def strict(node: exp.Expression, alias: str) -> bool:
    """Is `node` NULL whenever every column of the input `alias` is NULL?"""
    if isinstance(node, exp.Column):
        return node.table == alias
    if isinstance(node, exp.Null):
        return True
    if isinstance(node, exp.Case):
        results = [i.args.get("true") for i in node.args.get("ifs") or []]
        default = node.args.get("default")
        return bool(results) and all(
            r is not None and strict(r, alias) for r in [*results, *([default] if default else [])]
        )
    if isinstance(node, exp.In):
        return not node.args.get("query") and strict(node.this, alias)
    if isinstance(node, _EITHER):
        return strict(node.this, alias) or strict(node.expression, alias)
    if isinstance(node, _FIRST):
        return strict(node.this, alias)
    return False


def rejects(condition: exp.Expression, alias: str) -> bool:
    """Is `condition` never TRUE while every column of `alias` is NULL?"""
    if isinstance(condition, exp.Paren):
        return rejects(condition.this, alias)
    if isinstance(condition, exp.Boolean):
        return not condition.this
    if isinstance(condition, exp.And):
        return rejects(condition.this, alias) or rejects(condition.expression, alias)
    if isinstance(condition, exp.Or):
        return rejects(condition.this, alias) and rejects(condition.expression, alias)
    if isinstance(condition, exp.Coalesce):
        return all(rejects(a, alias) for a in [condition.this, *condition.expressions])
    if (  # x IS NOT NULL is FALSE where x is NULL
        isinstance(condition, exp.Not)
        and isinstance(condition.this, exp.Is)
        and isinstance(condition.this.expression, exp.Null)
    ):
        return strict(condition.this.this, alias)
    return strict(condition, alias)


def simplify_outer_joins(select: exp.Select) -> None:
    """Drop from each outer join of `select` the padding the WHERE rejects (in place): a
    LEFT JOIN whose right input the WHERE rejects NULLs of becomes inner; a RIGHT JOIN one
    of whose inputs before it is rejected, inner; a FULL JOIN, LEFT, RIGHT or inner."""
    where = select.args.get("where")
    source = select.args.get("from_")
    if where is None or source is None:
        return
    before = [source.this.alias_or_name]
    for join in select.args.get("joins") or []:
        alias = join.alias_or_name
        side, kind = (join.side or "").upper(), (join.kind or "").upper()
        if side in ("LEFT", "RIGHT", "FULL") and kind in ("", "OUTER"):  # not SEMI / ANTI
            pads_right = side in ("LEFT", "FULL") and not (alias and rejects(where.this, alias))
            pads_left = side in ("RIGHT", "FULL") and not any(
                a and rejects(where.this, a) for a in before
            )
            if pads_left or pads_right:
                join.set("side", "FULL" if pads_left and pads_right else side_of(pads_right))
            else:
                join.set("side", None)
                join.set("kind", None)
        before.append(alias)


def side_of(pads_right: bool) -> str:
    """The side of a join that pads only one of its inputs: LEFT pads the right one."""
    return "LEFT" if pads_right else "RIGHT"
