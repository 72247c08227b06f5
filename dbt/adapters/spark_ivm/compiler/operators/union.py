"""union: set operations (UNION ALL, UNION, INTERSECT, EXCEPT) of flat SELECTs, one state
fed by every branch.

A UNION ALL is a sum of bags, so its delta is the sum of its branches' deltas:

    d(B_1 UNION ALL .. UNION ALL B_n) = dB_1 + .. + dB_n

Each branch is a flat query of its own (`Query.branches`) with its own inputs, joins and
WHERE; its delta is the ordinary sum over its inputs (`delta.py`), projected to the shared
key columns `__ivm_k<i>` (the i-th output of that branch). The terms of all branches are
added up per row, so a row two branches produce carries both weights. The state is a bag
(each distinct row with its multiplicity, `__ivm_count__`) for UNION ALL; for UNION it is
the same count per distinct row, shown once while it is positive (the DISTINCT of the sum).
One delta table, one MERGE and one metadata row whose watermarks cover every branch's base
relations: a relation two branches read is captured once and read by both.

Example: `select k from a union all select k from b`; insert k=1 into a, delete one k=1
from b -> the delta of row (1) is +1 - 1 = 0, and the state is not touched.

Each branch's keys are cast to the union's column types (Spark's, from `DESCRIBE QUERY`)
before the branches are added up and grouped again: Spark widens a column's type across
branches (an int branch and a string branch give strings), so rows that differ before the
widening may be one row after it, and a key compared as the branch's own type would match
the wrong state rows (a string compared with an int is cast to an int: '01' = 1).

INTERSECT and EXCEPT need to know which operand a row comes from, so the state keeps two
counts per distinct row: `__ivm_count__` (rows of both operands) and the left operand's
count l, kept as count(side) of a side marker that is 1 on the left branches' rows and NULL
on the right's (the COUNT rule, `aggregates/counting.py`); the right count is r = count - l.
Both follow the same sums of deltas:

    l' = l + sum(w over left rows)      count' = count + sum(w over all rows)

and a row is shown while l > 0 and r > 0 (INTERSECT), l > 0 and r = 0 (EXCEPT), least(l, r)
times (INTERSECT ALL) or l - r times while positive (EXCEPT ALL). An operand may itself be a
UNION ALL / UNION chain (its branches' counts add up), and `a EXCEPT b EXCEPT c` is
`a EXCEPT (b UNION ALL c)` in every variant.

Example: `select k from a except select k from b`, a = {1, 2}, b = {2}: state (count, l)
of 1: (1, 1), of 2: (2, 1) -> shows 1. Delete 2 from b: delta of 2 is (count -1, l 0) ->
(1, 1), r = 0 -> shows 1 and 2.

Any other nested set operation (`nested_operands`: a third INTERSECT operand, an INTERSECT
or EXCEPT as an operand or inside a UNION, an EXCEPT ALL link of an EXCEPT chain or the
other way round, a UNION inside an ALL form) is a sub-query state of its own
(`stages.wrap_stage_branches`), and the outer operation reads its view as a flat branch:

    op(N, c) = op(view(state of N), c)

exact because the state's relation is N after its refresh, and its change log is the
parent's input delta (a bag state's rows repeated l - r / least(l, r) / count times,
`bag_input.py`; a distinct state's filtered by its HAVING). Spark binds INTERSECT tighter
than UNION / EXCEPT, and so does sqlglot's tree: `a UNION b INTERSECT c` is
`a UNION (b INTERSECT c)`.

Example: `a INTERSECT ALL b INTERSECT ALL c`, a = {1, 1, 1}, b = {1, 1}, c = {1, 1, 1}:
state s0 of `a INTERSECT ALL b` holds 1 with (count 5, l 3): least(3, 2) = 2 copies; the
model's state holds 1 with (count 5, l 2) and shows least(2, 3) = 2 copies.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.errors import UnsupportedQueryError
from dbt.adapters.spark_ivm.compiler.errors import fragment as _fragment
from dbt.adapters.spark_ivm.compiler.ir import KeyRange, Query
from dbt.adapters.spark_ivm.compiler.operators.aggregates import COUNT
from dbt.adapters.spark_ivm.compiler.operators.delta import WEIGHT, TermRenderer
from dbt.adapters.spark_ivm.compiler.plan import Plan, Shape, bag_key
from dbt.adapters.spark_ivm.compiler.render import compacted_delta_select, full_term
from dbt.adapters.spark_ivm.compiler.sql.state_table import META, ROW, with_meta_row
from dbt.adapters.spark_ivm.compiler.sql.templates import col, template, union_all


def _typed(
    plan: Plan, part: exp.Select, extra: Sequence[str], side: exp.Expression | None = None
) -> exp.Select:
    """`part` with each key cast to the union's type of its column: a branch compared as
    its own type would match other rows (a string key compared with an int one is cast to
    an int: '01' = 1) and group apart rows that the union makes one ('1' and 1). An
    INTERSECT / EXCEPT part also gets its side marker (`side_marker`)."""
    select = exp.Select().from_(exp.alias_(exp.Subquery(this=part), "__ivm_part"))
    for name, dtype in zip(plan.key_columns, plan.output_types):
        typed = exp.cast(col(name), exp.DataType.build(dtype, dialect="spark"))
        if plan.shape is Shape.BAG and plan.query.set_op is None:
            typed = bag_key(typed, dtype)  # a UNION ALL keeps -0.0 apart from 0.0
        select = select.select(exp.alias_(typed, name, quoted=True))
    select = select.select(*(col(c) for c in extra))
    if side is not None:
        select = select.select(exp.alias_(side, plan.rules[0].arg_column, quoted=True))
    return select


def side_marker(plan: Plan, branch: int) -> exp.Expression | None:
    """The side column of branch number `branch` of an INTERSECT / EXCEPT: 1 on the left
    operand, NULL on the right (None for a UNION, which keeps no side)."""
    if plan.query.set_op is None:
        return None
    if branch < plan.query.left_branches:
        return exp.Literal.number(1)
    return exp.cast(exp.null(), exp.DataType.build("int"))


def _sum_of(
    plan: Plan,
    parts: Sequence[tuple[int, exp.Select]],
    extra: Sequence[str] = (),
    by_side: bool = False,
) -> exp.Select:
    """`SELECT keys FROM (part UNION ALL part ..) GROUP BY keys`, each part (with its branch
    number) typed and marked by `_typed`; `by_side` also groups by the side: add the
    aggregate."""
    keys = [*plan.key_columns, *([plan.rules[0].arg_column] if by_side else [])]
    typed = [_typed(plan, part, extra, side_marker(plan, n)) for n, part in parts]
    union = union_all(typed)
    select = exp.Select().from_(exp.alias_(exp.Subquery(this=union), "__ivm_branches"))
    select = select.select(*(col(k) for k in keys))
    return select.group_by(*(col(k) for k in keys)) if keys else select


def initial_select(plan: Plan, renderers: Sequence[TermRenderer], meta: str) -> exp.Expression:
    """Every distinct row of all branches with its multiplicity (and, for INTERSECT /
    EXCEPT, its left operand's count), plus the metadata row."""
    keys = plan.key_columns
    parts = []
    for n, (branch, renderer) in enumerate(zip(plan.branches, renderers)):
        term = full_term(branch.query)
        parts.append((n, renderer.render(term, list(zip(keys, branch.keys)), with_weight=False)))
    rows = _sum_of(plan, parts)
    rows = rows.select(exp.alias_(template("COUNT(*)"), COUNT, quoted=True))
    helpers = [name for rule in plan.rules for name in rule.initial()]
    for rule in plan.rules:
        rows = rows.select(*(exp.alias_(v, k, quoted=True) for k, v in rule.initial().items()))
    select = exp.Select().select(
        exp.alias_(exp.Literal.number(0), ROW, quoted=True),
        exp.alias_(exp.cast(exp.null(), exp.DataType.build("string")), META, quoted=True),
        *(col(k) for k in [*keys, COUNT, *helpers]),
    )
    select = select.from_(exp.alias_(exp.Subquery(this=rows), "__ivm_rows"))
    return with_meta_row(select, meta, [*keys, COUNT, *helpers])


def compacted_select(
    plan: Plan,
    renderers: Sequence[TermRenderer],
    key_ranges: Sequence[Mapping[tuple[int, str], KeyRange]],
) -> exp.Select | None:
    """The sum of the branches' compacted deltas, identical rows (of one side, for
    INTERSECT / EXCEPT) summed, zero weights dropped (None when no branch's input changed)."""
    parts = [
        (n, part)
        for n, (branch, renderer, ranges) in enumerate(zip(plan.branches, renderers, key_ranges))
        if (part := compacted_delta_select(branch, renderer, ranges)) is not None
    ]
    if not parts:
        return None
    w = col(WEIGHT)
    summed = _sum_of(plan, parts, [WEIGHT], by_side=plan.query.set_op is not None)
    summed = summed.select(exp.alias_(template("SUM(:w)", w=w), WEIGHT, quoted=True))
    return summed.having(template("SUM(:w) <> 0", w=w))


# ------------------------------------------------------------------------------------------------
# analysis: which SELECTs a set operation combines, on which side
# ------------------------------------------------------------------------------------------------


def _name(node: exp.SetOperation) -> str:
    kind = type(node).__name__.upper()
    return kind if node.args.get("distinct") else f"{kind} ALL"


def _a(name: str) -> str:
    """`name` with its article ("a UNION ALL", "an EXCEPT")."""
    return f"{'a' if name.startswith('UNION') else 'an'} {name}"


def _bare(node: exp.Expression) -> exp.Expression:
    """`node` without the parentheses around it (an unaliased sub-query of a query)."""
    while isinstance(node, exp.Subquery) and not node.alias and isinstance(node.this, exp.Query):
        node = node.this
    return node


def _clauses(node: exp.Expression) -> list[str]:
    """The clauses on a set operation that order or cut its rows (ORDER BY, LIMIT, OFFSET)."""
    return [arg for arg in ("order", "limit", "offset") if node.args.get(arg) is not None]


def _leaves(node: exp.Expression, distinct: bool) -> list[exp.Expression]:
    """The operands a UNION ALL (or UNION) chain combines, left to right: its SELECTs, and
    each set operation the flat rule does not combine (`nested_operands`). Where only the
    presence of a row counts (`distinct`) any nested UNION ALL / UNION flattens; otherwise
    only UNION ALL does (a UNION inside a UNION ALL counts a row once, whatever its
    branches' counts)."""
    inner = _bare(node)
    if (
        isinstance(inner, exp.Union)
        and (distinct or not inner.args.get("distinct"))
        and not _clauses(inner)
    ):
        return [*_leaves(inner.this, distinct), *_leaves(inner.expression, distinct)]
    return [inner]


def operands(tree: exp.SetOperation) -> tuple[list[exp.Expression], int]:
    """The operands the flat rule combines into one state, left operand's first, and how
    many of them are on the left (0 for a UNION): SELECTs, or set operations it cannot
    combine, which `stages.wrap_stage_branches` makes sub-query states of their own.

    A UNION chain is one operand list. An INTERSECT / EXCEPT has a left operand and a right
    one, each a UNION chain; an EXCEPT chain `a EXCEPT b EXCEPT c` is `a EXCEPT (b UNION ALL
    c)` when every link is the same form (with ALL: max(max(a - b, 0) - c, 0) = max(a - b -
    c, 0)). Anything else is nested: the left operand of a 3-operand INTERSECT (`a INTERSECT
    b INTERSECT c` is `(a INTERSECT b) INTERSECT c`), an EXCEPT ALL link of an EXCEPT chain,
    an INTERSECT / EXCEPT inside a UNION or as an operand, a UNION inside an ALL form.

    >>> import sqlglot
    >>> def shown(select):
    ...     found, left = operands(sqlglot.parse_one(select, dialect="spark"))
    ...     return [leaf.sql("spark") for leaf in found], left
    >>> shown("select k from a except select k from b except select k from c")
    (['SELECT k FROM a', 'SELECT k FROM b', 'SELECT k FROM c'], 1)
    >>> shown("select k from a intersect select k from b intersect select k from c")[1]
    1
    """
    distinct = bool(tree.args.get("distinct"))
    if isinstance(tree, exp.Union):  # its own ORDER BY / LIMIT is the model's, not a branch's
        return [*_leaves(tree.this, distinct), *_leaves(tree.expression, distinct)], 0
    left, rights = tree.this, [tree.expression]
    while (
        isinstance(tree, exp.Except)
        and isinstance(left, exp.Except)
        and bool(left.args.get("distinct")) == distinct
        and not _clauses(left)
    ):
        left, rights = left.this, [left.expression, *rights]
    lefts = _leaves(left, distinct)
    return [*lefts, *(leaf for right in rights for leaf in _leaves(right, distinct))], len(lefts)


def nested_operands(tree: exp.SetOperation) -> list[exp.SetOperation]:
    """The set operations among `tree`'s operands (`operands`): each is maintained as a
    sub-query state of its own, and `tree` reads it as a flat branch over its view."""
    return [leaf for leaf in operands(tree)[0] if isinstance(leaf, exp.SetOperation)]


def analyze_set_operation(
    tree: exp.SetOperation, sql: str, model: str, analyze_branch: Callable[[str], Query]
) -> Query:
    """A UNION ALL / UNION / INTERSECT / EXCEPT of flat SELECTs: each branch analysed on its
    own by `analyze_branch` (its SQL, with the set operation's CTEs). A nested set operation
    the flat rule does not combine reaches here as a sub-query state's view
    (`stages.wrap_stage_branches`); left in place, it is refused by name."""
    distinct = bool(tree.args.get("distinct"))
    within = _name(tree)  # UNION, UNION ALL, INTERSECT, EXCEPT ALL, ..
    for arg, construct in (("limit", "LIMIT"), ("offset", "OFFSET")):
        if tree.args.get(arg) is not None:
            raise UnsupportedQueryError(model, construct, _fragment(tree.args[arg]))
    if not isinstance(tree, (exp.Union, exp.Intersect, exp.Except)):
        raise UnsupportedQueryError(model, f"set operation {_name(tree)}", _fragment(tree))
    set_op = {exp.Intersect: "intersect", exp.Except: "except"}.get(type(tree))
    leaves, left_count = operands(tree)
    with_ = tree.args.get("with_")
    branches: list[Query] = []
    for leaf in leaves:
        if isinstance(leaf, exp.SetOperation):
            clauses = _clauses(leaf) if isinstance(leaf, exp.Union) else []
            construct = (
                f"{clauses[0].upper()} on a branch of {_a(within)}"
                if clauses
                else f"{_a(_name(leaf))} as an operand of {_a(within)}"
            )
            # `stages.wrap_stage_branches` makes it a sub-query state before analysis
            raise UnsupportedQueryError(model, construct, _fragment(leaf))
        if not isinstance(leaf, exp.Select):
            raise UnsupportedQueryError(
                model, f"{_a(within)} branch that is not a SELECT", _fragment(leaf)
            )
        branch = leaf.copy()
        if with_ is not None:
            branch.set("with_", with_.copy())
        query = analyze_branch(branch.sql(dialect="spark"))
        if query.is_aggregate or query.window_keys is not None or (query.distinct and not distinct):
            raise UnsupportedQueryError(
                model,
                f"{_a(within)} branch that aggregates, is DISTINCT or computes window functions",
                _fragment(leaf),
                "Compute that branch in a model of its own (an ivm model) and read its relation.",
            )
        if branches and len(query.outputs) != len(branches[0].outputs):
            raise UnsupportedQueryError(
                model, f"{within} branches with different numbers of columns", _fragment(leaf)
            )
        branches.append(query)
    notes = [n for b in branches for n in b.notes]
    if tree.args.get("order"):
        notes.append("ORDER BY ignored: a maintained relation has no row order")
    return Query(
        model=model,
        sql=sql,
        inputs=[inp for b in branches for inp in b.inputs],
        steps=[],
        where=None,
        group_by=[],
        aggregates=[],
        outputs=[o.copy() for o in branches[0].outputs],
        having=None,
        distinct=distinct,
        is_aggregate=False,
        notes=list(dict.fromkeys(notes)),
        branches=branches,
        set_op=set_op,
        left_branches=left_count,
        weights={r: c for b in branches for r, c in b.weights.items()},
    )
