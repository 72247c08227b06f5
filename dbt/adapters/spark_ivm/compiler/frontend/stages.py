"""stages: sub-queries that aggregate or are DISTINCT, each maintained as a state of its own.

(EXISTS / NOT EXISTS / IN tests become joins with DISTINCT sub-queries first, `semi_join.py`,
and scalar sub-queries joins with aggregates, `scalar.py`.)

A sub-query in FROM or JOIN (or a CTE, inlined at each use) that groups, aggregates or is
DISTINCT does not flatten into its parent's SELECT. It is an operator of the dataflow with
its own state (docs/architecture.md, §4): an ivm state `<model>__ivm_s<i>` maintained first,
innermost first, by the ordinary rules (`dataflow.cut` cuts them out). Its parent then reads
that state table through the state's view SELECT, which does flatten (a projection and a
filter of one table), so to the parent the state table is one more Iceberg base table with
its own watermark. Each state commits
on its own and records the snapshots of its inputs, like an auxiliary state
(`runtime/walk.py`).

    select c.region, count(*) n, sum(t.total) s
    from (select cust, sum(amount) total from db.orders group by cust) t
    join db.customers c on c.id = t.cust group by c.region
    ->  s0:    select cust, sum(amount) total from db.orders group by cust
        model: select c.region, count(*) n, sum(t.total) s
               from (<s0's view SELECT over m__ivm_s0__ivm_state>) t join db.customers c ...

The maintained result is exact because each state's relation equals its SELECT after its
refresh (by induction from the innermost), and the parent's delta is read from the state
table's commits like any base table's.
"""

from __future__ import annotations

from collections.abc import Mapping

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.schema import MappingSchema

from dbt.adapters.spark_ivm.compiler.errors import UnsupportedQueryError
from dbt.adapters.spark_ivm.compiler.frontend import catalogs, having, scalar, semi_join
from dbt.adapters.spark_ivm.compiler.frontend.normalise import (
    inline_ctes,
    qualified,
    unbracket_joins,
)
from dbt.adapters.spark_ivm.compiler.operators import union

DIALECT = "spark"


def is_stage(select: exp.Expression) -> bool:
    """Does this SELECT keep a state of its own: it groups, aggregates, is DISTINCT or
    computes window functions (`window.py`), or is a set operation (`union.py`; the parent
    reads the bag state of a UNION ALL, INTERSECT ALL or EXCEPT ALL as repeated rows,
    `bag_input.py`)."""
    if isinstance(select, exp.SetOperation):
        return True
    if not isinstance(select, exp.Select):
        return False
    if select.args.get("group") or select.args.get("distinct"):
        return True
    if any(w.find_ancestor(exp.Select) is select for w in select.find_all(exp.Window)):
        return True
    return any(agg.find_ancestor(exp.Select) is select for agg in select.find_all(exp.AggFunc))


def _is_input(node: exp.Subquery) -> bool:
    return isinstance(node.parent, (exp.From, exp.Join))


def _candidates(tree: exp.Expression) -> list[exp.Subquery]:
    return [s for s in tree.find_all(exp.Subquery) if _is_input(s) and is_stage(s.this)]


def innermost(tree: exp.Expression) -> exp.Subquery | None:
    """A sub-query input that keeps a state and has no such input inside, else None."""
    for sub in _candidates(tree):
        if not _candidates(sub.this):
            return sub
    return None


def set_leaves(tree: exp.Expression) -> list[exp.Select]:
    """The SELECTs a set operation combines (a SELECT: itself), left to right; [] when a
    branch is something else (analysis names it)."""
    if isinstance(tree, exp.Subquery) and not tree.alias and isinstance(tree.this, exp.Query):
        return set_leaves(tree.this)
    if isinstance(tree, exp.SetOperation):
        left, right = set_leaves(tree.this), set_leaves(tree.expression)
        return [*left, *right] if left and right else []
    return [tree] if isinstance(tree, exp.Select) else []


def _is_root(op: exp.SetOperation, tree: exp.Expression) -> bool:
    """Is `op` a whole set operation: the model's, a sub-query input's or a CTE's (not an
    operand of another, nor one inside an expression, which analysis refuses)?"""
    if op is tree or isinstance(op.parent, exp.CTE):
        return True
    return isinstance(op.parent, exp.Subquery) and op.parent.alias != "" and _is_input(op.parent)


def _as_input(node: exp.Expression, alias: str) -> None:
    """Replace `node` (in place) by `SELECT * FROM (node) <alias>`."""
    inner = exp.Subquery(this=node.copy(), alias=exp.TableAlias(this=exp.to_identifier(alias)))
    node.replace(exp.Select().select(exp.Star()).from_(inner))


def _distinct_only(select: exp.Select) -> bool:
    """Does `select` keep a state only because it is DISTINCT (no GROUP BY, aggregate or
    window)?"""
    plain = select.copy()
    plain.set("distinct", None)
    return bool(select.args.get("distinct")) and not is_stage(plain)


def _wrap(op: exp.SetOperation, prefix: str = "__ivm_u", model_level: bool = False) -> None:
    distinct = bool(op.args.get("distinct"))
    for index, leaf in enumerate(union.operands(op)[0]):
        if isinstance(leaf, exp.SetOperation):
            # Its own operands first (they go with it into the sub-query), named apart from
            # this level's for whoever reads the SQL: __ivm_u0_1 is operand 1 of __ivm_u0.
            _wrap(leaf, f"{prefix}{index}_")
            _as_input(leaf, f"{prefix}{index}")
        elif is_stage(leaf) and (model_level or not (distinct and _distinct_only(leaf))):
            # Under a distinct operation a DISTINCT branch counts as its plain rows (only a
            # row's presence matters), which the flat rule reads; the model's own operation
            # wraps it anyway, as it did when these set operations were first built (its
            # SQL, and so its states, stay as they were).
            _as_input(leaf, f"{prefix}{index}")


def wrap_stage_branches(tree: exp.Expression) -> None:
    """Each operand of a set operation (the model's, a sub-query's in FROM or a CTE's) that
    keeps a state of its own becomes a sub-query input, `SELECT * FROM (operand) __ivm_u<i>`
    (i: its place among the operands), in place: cut like any other, it leaves a flat branch
    reading its state's view. Such an operand is a branch that aggregates, is DISTINCT or
    computes windows, or a set operation the flat rule does not combine
    (`union.nested_operands`), whose own operands are wrapped first.

    Example: `select k, count(*) from t group by k union all select k, 1 from u` -> the
    first branch is `select * from (select k, count(*) from t group by k) __ivm_u0`;
    `select k from a intersect select k from b intersect select k from c` -> `select * from
    (select k from a intersect select k from b) __ivm_u0 intersect select k from c`: the
    inner INTERSECT is a state (distinct rows) and the outer one a flat INTERSECT over its
    view. An ALL form inside is a bag state, read as repeated rows (`bag_input.py`)."""
    roots = [op for op in tree.find_all(exp.SetOperation) if _is_root(op, tree)]
    for op in reversed(roots):  # inner ones first: an outer one moves copies of its operands
        _wrap(op, model_level=op is tree)


def needed(compiled_sql: str) -> bool:
    """Does the model have a sub-query or CTE that keeps a state of its own? (Syntax only:
    no Spark statement, so a flat model pays nothing for the question.)"""
    try:
        tree = sqlglot.parse_one(compiled_sql, dialect=DIALECT)
    except ParseError:
        return False  # analyze reports it
    leaves = set_leaves(tree)
    if not leaves:
        return False
    if isinstance(tree, exp.SetOperation) and (
        any(is_stage(leaf) for leaf in leaves) or union.nested_operands(tree)
    ):
        return True
    tree = inline_ctes(tree.copy())
    for leaf in set_leaves(tree):
        if _candidates(leaf) or semi_join.has_subquery_test(leaf):
            return True
        if any(scalar.is_scalar(s) for s in leaf.find_all(exp.Subquery)):
            return True
    return False


def prepare(compiled_sql: str, model: str, schemas: Mapping, default_db: str) -> exp.Query:
    """The model's SELECT (or set operation), qualified, with its CTEs inlined at each use
    and its branches that keep states wrapped as sub-queries: ready to be cut into states
    (`innermost`) from the inside out."""
    tree = sqlglot.parse_one(compiled_sql, dialect=DIALECT)
    if not set_leaves(tree):
        raise UnsupportedQueryError(model, "a statement that is not a SELECT", compiled_sql[:120])
    for leaf in set_leaves(tree):
        unbracket_joins(leaf, model)
    wrap_stage_branches(tree)
    tree = qualified(tree, model, schemas, default_db)
    assert isinstance(tree, exp.Query)
    tree = inline_ctes(tree)
    for select in reversed(list(tree.find_all(exp.Select))):
        if having.needed(select):
            lifted = having.lift(select)
            if select is tree:
                tree = lifted
            else:
                select.replace(lifted)
    if semi_join.has_subquery_test(tree):
        annotate(tree, schemas)  # IN compares its sides by their types (`semi_join`)
    for select in reversed(list(tree.find_all(exp.Select))):
        semi_join.rewrite(select, model)
        scalar.rewrite(select, model)
    semi_join.check_no_other_tests(tree, model)
    return tree


def annotate(tree: exp.Select, schemas: Mapping) -> None:
    """Give every expression of the qualified `tree` its type (sqlglot's inference over the
    base tables' Spark types, in place); a column whose Spark type sqlglot cannot read is of
    unknown type."""

    def typed(dtype: str) -> exp.DataType:
        try:
            return exp.DataType.build(dtype, dialect=DIALECT)
        except (ParseError, ValueError):
            return exp.DataType.build("unknown")

    nested = catalogs.nested_schema(schemas, typed)
    try:
        with catalogs.two_part_names_here(tree, catalogs.names_catalogs(schemas)):
            annotate_types(tree, schema=MappingSchema(nested, dialect=DIALECT), dialect=DIALECT)
    except Exception:  # noqa: BLE001 - sqlglot could not type it: IN sides stay untyped (refused)
        for node in tree.walk():
            node.type = None


def named_by_text(compiled_sql: str) -> bool:
    """Does the model's text alone name its result columns: no `*` or `t.*` among the
    outer SELECT's columns (of every branch of a set operation), whose expansion depends on
    the base tables' schemas?

    >>> named_by_text("select a, b + 1 from t"), named_by_text("select t.* from t")
    (True, False)
    >>> named_by_text("select a from t union all select * from u")
    False
    """
    leaves = set_leaves(sqlglot.parse_one(compiled_sql, dialect=DIALECT))
    return bool(leaves) and not any(e.is_star for leaf in leaves for e in leaf.expressions)


def name_outputs(tree: exp.Query, names: list[str]) -> None:
    """Alias the model's result columns with `names` (Spark's names for its own SELECT; of
    a set operation: its first branch's)."""
    leaves = set_leaves(tree)
    if not leaves or len(names) != len(leaves[0].expressions):
        return  # analyze reports the mismatch
    tree = leaves[0]
    tree.set(
        "expressions",
        [exp.alias_(e.unalias(), n, quoted=True) for e, n in zip(tree.expressions, names)],
    )
