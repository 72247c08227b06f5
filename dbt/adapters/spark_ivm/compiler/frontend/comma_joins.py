"""comma_joins: `FROM a, b, c WHERE <join predicates>` as a chain of inner joins with ON.

TPC-H and much hand-written SQL join by listing relations in FROM and putting the join
predicates in WHERE. Spark's optimizer pushes them into the joins (and reorders the joins so
that each has a condition). A delta term, though, is a chain of its own: a change log joined
with the other inputs in FROM order; and a factored bracket (`factored.py`) or an auxiliary
state is computed apart from the WHERE above it. With `ON TRUE` steps such a statement is a
cartesian product the model's own query never forms. So, for a SELECT whose joins start
with inner ones, at least one without ON, this rewrite (an equality of relational algebra for
inner joins) runs on that inner prefix before the IR is read; later joins may be LEFT or
inner (a semi join's state, a scalar sub-query's, TPC-H Q16 and Q21), whose rows a filter of
the prefix commutes with, and keep their place:

1. Each conjunct of WHERE and of the joins' ONs that reads two or more inputs (and holds no
   sub-query, aggregate or window) is a join predicate.
2. The inputs are ordered as Spark's `ReorderJoin` orders them: the first FROM item first,
   then repeatedly the first remaining item (in FROM order) that a join predicate connects
   with those already placed; an item no predicate connects comes last, a cross join the
   query itself has. Where the FROM order already connects every step it is kept.
   Before that, a disjunction whose every branch repeats a conjunct is factored, as Spark's
   `BooleanSimplification` does: `(a AND b) OR (a AND c) == a AND (b OR c)` (distributivity
   holds in SQL's three-valued logic), so TPC-H Q19's join key, written in each branch,
   becomes a join predicate.
3. Each join predicate goes into the ON of the join of the last of its inputs; a
   single-input conjunct of an ON goes into the ON of its input's join (WHERE for the first).

    >>> import sqlglot
    >>> s = sqlglot.parse_one("select * from p, s, l where p.k = l.pk and s.k = l.sk "
    ...                       "and p.size = 15", read="spark")
    >>> place_join_predicates(s)
    >>> s.sql("spark")
    'SELECT * FROM p JOIN l ON p.k = l.pk JOIN s ON s.k = l.sk WHERE p.size = 15'

A `SELECT *` keeps the FROM order of its columns only before `qualify` expands it: the
compiler runs this rewrite on qualified trees, whose projections are explicit.
"""

from __future__ import annotations

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.sql.templates import conjuncts

#: Nodes that keep a conjunct in WHERE: its inputs are not just the columns it names.
_BOUND = (exp.Subquery, exp.Exists, exp.AggFunc, exp.Window, exp.Select)


def _inner(join: exp.Join) -> bool:
    kind = (join.kind or "").upper()
    return (
        not join.side
        and kind in ("", "INNER", "CROSS")
        and not join.args.get("using")
        and not join.args.get("method")
    )


def _after(join: exp.Join) -> bool:
    """A join after the inner prefix that a filter of the prefix commutes with: a LEFT join
    keeps every row of the prefix, an inner one filters them (a RIGHT or FULL join pads the
    prefix with NULLs, where a filter would have removed rows)."""
    return (join.side or "").upper() in ("", "LEFT")


def _inputs_of(node: exp.Expression, aliases: set[str]) -> set[str] | None:
    """The inputs a conjunct reads, or None when it must stay where it is (it holds a
    sub-query, an aggregate or a window, or reads a column of an outer query)."""
    if node.find(*_BOUND) is not None:
        return None
    read = {column.table for column in node.find_all(exp.Column)}
    if not read <= aliases:
        return None
    return read


def factor_common(node: exp.Expression) -> list[exp.Expression]:
    """The conjuncts of `node` with the conjuncts common to every branch of an OR pulled out.

    >>> import sqlglot
    >>> e = sqlglot.parse_one("(a = b AND x = 1) OR (x = 2 AND a = b)", read="spark")
    >>> [n.sql("spark") for n in factor_common(e)]
    ['a = b', 'x = 1 OR x = 2']
    """
    if not isinstance(node, exp.Or):
        return [node]
    branches = [conjuncts(b) for b in _disjuncts(node)]
    common = [c for c in branches[0] if all(any(_same(c, o) for o in b) for b in branches[1:])]
    if not common:
        return [node]
    rests = [[c for c in b if not any(_same(c, o) for o in common)] for b in branches]
    if any(not rest for rest in rests):
        return [c.copy() for c in common]  # a branch is just the common part: it absorbs
    rest = exp.or_(*(exp.and_(*(c.copy() for c in r)) for r in rests))
    return [*(c.copy() for c in common), rest]


def _same(a: exp.Expression, b: exp.Expression) -> bool:
    """Equal conditions, an equality's sides in either order (`p = l` is `l = p`)."""
    if isinstance(a, exp.EQ) and isinstance(b, exp.EQ):
        return (a.this == b.this and a.expression == b.expression) or (
            a.this == b.expression and a.expression == b.this
        )
    return a == b


def _disjuncts(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.Or):
        return [*_disjuncts(node.left), *_disjuncts(node.right)]
    if isinstance(node, exp.Paren):
        return _disjuncts(node.this)
    return [node]


def _ordered(items: list[str], predicates: list[set[str]]) -> list[str]:
    """Spark's ReorderJoin order: each next item connected to the placed ones if any is.

    >>> _ordered(["p", "s", "l"], [{"p", "l"}, {"s", "l"}])
    ['p', 'l', 's']
    >>> _ordered(["a", "b"], [])
    ['a', 'b']
    """
    placed = [items[0]]
    remaining = items[1:]
    while remaining:
        chosen = next(
            (
                item
                for item in remaining
                if any(item in p and p - {item} and p - {item} <= set(placed) for p in predicates)
            ),
            remaining[0],
        )
        placed.append(chosen)
        remaining.remove(chosen)
    return placed


def place_join_predicates(select: exp.Select) -> None:
    """Rewrite `select`'s comma joins into inner joins ON their predicates (in place)."""
    from_ = select.args.get("from_")
    every = list(select.args.get("joins") or [])
    inner = next((i for i, j in enumerate(every) if not _inner(j)), len(every))
    joins, after = every[:inner], every[inner:]
    if from_ is None or not joins or not all(_after(j) for j in after):
        return
    if all(j.args.get("on") is not None for j in joins):
        return
    items = [from_.this, *(j.this for j in joins)]
    names = [item.alias_or_name for item in items]
    if len(set(names)) != len(names) or not all(names):
        return
    aliases = set(names)

    where = select.args.get("where")
    kept_where: list[exp.Expression] = []
    moved: list[tuple[exp.Expression, set[str]]] = []
    found = conjuncts(where.this if where is not None else None)
    for conjunct in [part for c in found for part in factor_common(c)]:
        read = _inputs_of(conjunct, aliases)
        if read is not None and len(read) >= 2:
            moved.append((conjunct, read))
        else:
            kept_where.append(conjunct)
    local: dict[str, list[exp.Expression]] = {}
    for join in joins:
        on = join.args.get("on")
        for conjunct in conjuncts(on):
            if isinstance(conjunct, exp.Boolean) and conjunct.this:
                continue  # ON TRUE
            read = _inputs_of(conjunct, aliases)
            if read is None or len(read) < 2:
                # Reads only its own input (or nothing): it stays with that input's join.
                local.setdefault(join.this.alias_or_name, []).append(conjunct)
            else:
                moved.append((conjunct, read))

    order = _ordered(names, [read for _, read in moved])
    position = {name: i for i, name in enumerate(order)}
    by_name = dict(zip(names, items))
    ons: dict[str, list[exp.Expression]] = {name: [] for name in order}
    for conjunct, read in moved:
        ons[max(read, key=position.__getitem__)].append(conjunct)
    for name, nodes in local.items():
        if position[name] == 0:
            kept_where.extend(nodes)
        else:
            ons[name].extend(nodes)

    from_.set("this", by_name[order[0]])
    new_joins = []
    for name in order[1:]:
        join = exp.Join(this=by_name[name])
        if ons[name]:
            join.set("on", exp.and_(*(n.copy() for n in ons[name])))
        new_joins.append(join)
    select.set("joins", [*new_joins, *after])
    select.set("where", exp.Where(this=exp.and_(*kept_where)) if kept_where else None)
