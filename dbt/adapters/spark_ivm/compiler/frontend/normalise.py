"""normalise: a model's SELECT rewritten into one flat SELECT wherever that is exact.

The rules an operator of the IR needs come after this: `analyze` reads a single SELECT over
a left-deep chain of base relations. dbt models are rarely written that way; they are CTEs
over CTEs (`with orders as (select .. from {{ ref('stg_orders') }} where ..)`) joined at the
end. Four rewrites, each an equality of relational algebra, run in order:

1. `qualify` (sqlglot): every column carries the alias of its input; `*` is expanded.
2. `unbracket_joins`: a join in parentheses is re-associated into the chain where that is
   exact: always at the start of FROM, `(r JOIN s ON p) JOIN t ON q == r JOIN s ON p JOIN t
   ON q`; on the right of an inner join when every join inside is inner too,
   `r JOIN (s JOIN t ON p) ON q == r CROSS JOIN s JOIN t ON p AND q`. Otherwise (an outer
   join of a bracketed join) it is refused by name: it is no sub-query.
3. `inline_ctes`: every reference to a CTE becomes a copy of its body, so a CTE used twice
   (a self join) is two inputs, not one shared relation.
4. `merge_filtered_inputs`: a sub-query that only filters and projects one base relation,
   `(SELECT f(t.x) AS y FROM db.t AS t WHERE p) AS a`, becomes `db.t AS a`, its columns
   replaced by their expressions and `p` placed where it removes exactly the rows the
   sub-query removed: in the ON of its join (inner or null-supplied by a LEFT join:
   `X LEFT JOIN (t WHERE p) a ON c == X LEFT JOIN t a ON c AND p`), or in WHERE where no
   later join can pad it with NULLs (`(t WHERE p) a LEFT JOIN Y ON c == t a LEFT JOIN Y ON
   c WHERE p`). A FULL join of a filtered sub-query stays as it is (and is refused later).

Then sqlglot's own `eliminate_subqueries`, `merge_subqueries` and `eliminate_ctes` flatten
what remains (a single filtered input, nested projections), `null_rejection` makes a LEFT
JOIN whose padded rows the WHERE drops an inner join, and `comma_joins` turns joins listed
in FROM with their predicates in WHERE into inner joins ON those predicates.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp
from sqlglot.errors import OptimizeError
from sqlglot.optimizer.eliminate_ctes import eliminate_ctes
from sqlglot.optimizer.eliminate_subqueries import eliminate_subqueries
from sqlglot.optimizer.merge_subqueries import merge_subqueries
from sqlglot.optimizer.qualify import qualify

from dbt.adapters.spark_ivm.compiler.errors import UnsupportedQueryError
from dbt.adapters.spark_ivm.compiler.frontend import catalogs
from dbt.adapters.spark_ivm.compiler.frontend.comma_joins import place_join_predicates
from dbt.adapters.spark_ivm.compiler.frontend.null_rejection import simplify_outer_joins

DIALECT = "spark"


def _side(join: exp.Join) -> str:
    return (join.side or "").upper()


def _is_inner(join: exp.Join) -> bool:
    return not _side(join) and (join.kind or "").upper() not in ("SEMI", "ANTI")


def _bracketed(node: exp.Expression) -> exp.Table | None:
    """The table heading a join in parentheses, `(r JOIN s ON p)`, else None."""
    if isinstance(node, exp.Subquery) and not node.alias:
        inner = node.this
        if isinstance(inner, exp.Table) and inner.args.get("joins"):
            return inner
    return None


def unbracket_joins(select: exp.Select, model: str) -> None:
    """Re-associate joins in parentheses into the chain of `select` (in place)."""
    changed = True
    while changed:
        changed = False
        from_ = select.args.get("from_")
        joins = list(select.args.get("joins") or [])
        head = _bracketed(from_.this) if from_ is not None else None
        if head is not None:
            inner_joins = head.args.pop("joins")
            from_.set("this", head)
            select.set("joins", [*inner_joins, *joins])
            changed = True
            continue
        for i, join in enumerate(joins):
            head = _bracketed(join.this)
            if head is None:
                continue
            inner_joins = list(head.args.get("joins"))
            if not (_is_inner(join) and all(_is_inner(j) for j in inner_joins)):
                raise UnsupportedQueryError(
                    model,
                    "an outer join of a join in parentheses (it does not re-associate into "
                    "a chain of joins read left to right)",
                    join.sql(dialect=DIALECT)[:120],
                    "Write the joins one after another (r FULL JOIN s ON .. FULL JOIN t ON ..) "
                    "if that is what you mean, or compute the bracketed join in an upstream "
                    "model.",
                )
            head.set("joins", None)
            on = join.args.get("on")
            last = inner_joins[-1]
            if on is not None:
                last_on = last.args.get("on")
                last.set("on", exp.and_(last_on, on) if last_on is not None else on)
            select.set("joins", [*joins[:i], exp.Join(this=head), *inner_joins, *joins[i + 1 :]])
            changed = True
            break


def inline_ctes(select: exp.Select) -> exp.Select:
    """Replace every reference to a CTE of `select` by a sub-query copy of its body."""
    with_ = select.args.get("with_")
    if with_ is None or with_.args.get("recursive"):
        return select
    ctes = list(with_.expressions)
    select.set("with_", None)
    for position, cte in enumerate(ctes):
        name = cte.alias_or_name.lower()
        scopes = [c.this for c in ctes[position + 1 :]] + [select]
        for scope in scopes:
            for ref in list(scope.find_all(exp.Table)):
                if ref.db or ref.name.lower() != name:
                    continue
                alias = exp.TableAlias(this=exp.to_identifier(ref.alias_or_name))
                ref.replace(exp.Subquery(this=cte.this.copy(), alias=alias))
    return select


def _single_input(select: exp.Expression) -> exp.Table | None:
    """The one base table of a SELECT that only filters and projects it, else None."""
    if not isinstance(select, exp.Select):
        return None
    blocking = ("joins", "group", "having", "distinct", "limit", "offset", "order", "with_")
    if any(select.args.get(arg) for arg in blocking) or select.find(exp.AggFunc, exp.Window):
        return None
    from_ = select.args.get("from_")
    source = from_.this if from_ is not None else None
    if not isinstance(source, exp.Table) or not source.name or source.args.get("joins"):
        return None
    return source


def _renamed(node: exp.Expression, old: str, new: str) -> exp.Expression:
    node = node.copy()
    for column in node.find_all(exp.Column):
        if column.table == old:
            column.set("table", exp.to_identifier(new))
    return node


def _placement(kinds: list[str], position: int, has_on: bool) -> str | None:
    """Where the filter of input `position` goes: "on", "where", or None (not exactly).

    `kinds[j]` is the side of the join of input j ("" inner, LEFT, RIGHT, FULL; kinds[0] is
    the FROM item's, unused); `has_on` whether that join has an ON to extend."""
    kind = kinds[position] if position > 0 else None
    if has_on and kind in ("", "LEFT"):
        return "on"
    padded_later = any(k in ("RIGHT", "FULL") for k in kinds[position + 1 :])
    if kind in ("LEFT", "FULL") or padded_later:
        return None
    return "where"


def merge_filtered_inputs(select: exp.Select) -> None:
    """Merge the filtering, projecting sub-queries among `select`'s joined inputs (in place)."""
    joins = list(select.args.get("joins") or [])
    from_ = select.args.get("from_")
    if from_ is None or not joins:
        return
    items = [from_.this, *(j.this for j in joins)]
    kinds = [""] + [_side(j) for j in joins]
    for position, item in enumerate(items):
        if not isinstance(item, exp.Subquery) or not item.alias:
            continue
        source = _single_input(item.this)
        if source is None:
            continue
        inner, alias = item.this, item.alias
        where = inner.args.get("where")
        condition = _renamed(where.this, source.alias_or_name, alias) if where else None
        has_on = position > 0 and joins[position - 1].args.get("on") is not None
        place = _placement(kinds, position, has_on) if condition is not None else "none"
        if place is None:
            continue
        columns: dict[str, exp.Expression] = {}
        for projection in inner.expressions:
            value = _renamed(projection.unalias(), source.alias_or_name, alias)
            if not isinstance(value, (exp.Column, exp.Literal)):
                value = exp.Paren(this=value)
            columns[projection.alias_or_name] = value
        table = source.copy()
        table.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
        item.replace(table)

        def substitute(node: exp.Expression, alias: str = alias, columns=columns):
            if isinstance(node, exp.Column) and node.table == alias and node.name in columns:
                return columns[node.name].copy()
            return node

        # Only this SELECT's own clauses: another input's sub-query is a scope of its own
        # (its aliases may repeat this one's).
        for arg in ("expressions", "where", "group", "having", "order"):
            value = select.args.get(arg)
            if isinstance(value, list):
                select.set(arg, [v.transform(substitute) for v in value])
            elif value is not None:
                select.set(arg, value.transform(substitute))
        for join in select.args["joins"]:
            if join.args.get("on") is not None:
                join.set("on", join.args["on"].transform(substitute))
        if condition is None:
            continue
        if place == "on":
            join = select.args["joins"][position - 1]
            join.set("on", exp.and_(join.args["on"], condition))
        else:
            select.where(condition, copy=False)


def qualified(
    tree: exp.Expression, model: str, schemas: Mapping, default_db: str
) -> exp.Expression:
    """sqlglot's `qualify`: every column with its input's alias, `*` expanded."""
    three = catalogs.names_catalogs(schemas)
    try:
        done = qualify(
            tree,
            schema=catalogs.nested_schema(schemas, lambda _: "string"),
            dialect=DIALECT,
            db=default_db,
            catalog=catalogs.HERE if three else None,
            quote_identifiers=False,
            validate_qualify_columns=True,
        )
        return catalogs.strip_here(done) if three else done
    except OptimizeError as e:
        raise UnsupportedQueryError(
            model, "a column or name that cannot be resolved", str(e)
        ) from e


def normalise(
    tree: exp.Expression, model: str, schemas: Mapping, default_db: str
) -> exp.Expression:
    """Qualify and flatten a parsed model SELECT (see the module docstring)."""
    if isinstance(tree, exp.Select):
        unbracket_joins(tree, model)
    tree = qualified(tree, model, schemas, default_db)
    try:
        if isinstance(tree, exp.Select):
            tree = inline_ctes(tree)
            for select in reversed(list(tree.find_all(exp.Select))):
                merge_filtered_inputs(select)
        tree = eliminate_subqueries(tree)
        tree = merge_subqueries(tree)
        tree = eliminate_ctes(tree)
    except OptimizeError as e:
        raise UnsupportedQueryError(
            model, "a column or name that cannot be resolved", str(e)
        ) from e
    for select in tree.find_all(exp.Select):
        simplify_outer_joins(select)
        place_join_predicates(select)
    return tree
