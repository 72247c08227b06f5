"""plan: the IR -> which rules maintain the query and the shape of its state table.

Three shapes, all keyed by `__ivm_k<i>` columns with a multiplicity `__ivm_count__`:

* aggregate: one state row per group (keys = GROUP BY expressions; no keys = exactly one row),
  plus each aggregate rule's helper columns (`aggregates/`);
* distinct: one state row per distinct output row, visible while its count > 0;
* bag: one state row per distinct output row, repeated `__ivm_count__` times by the view.

Example: `select k, sum(x) as s from t group by k` -> keys [t.k], state
(__ivm_k0, __ivm_count__, __ivm_sum_0, __ivm_nn_0), visible `k = __ivm_k0`,
`s = CASE WHEN __ivm_nn_0 = 0 THEN NULL ELSE __ivm_sum_0 END`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.errors import UnsupportedQueryError
from dbt.adapters.spark_ivm.compiler.ir import AggKind, Aggregate, JoinKind, Query
from dbt.adapters.spark_ivm.compiler.operators.aggregates import (
    COUNT,
    KEEP,
    AggregateRule,
    CountRule,
    ExtremeRule,
    RecomputeRule,
    rule_for,
)
from dbt.adapters.spark_ivm.compiler.operators.outer_join import equi_keys
from dbt.adapters.spark_ivm.compiler.sql.templates import col, template


def output_column(index: int) -> str:
    """The state column of a windowed model's output number `index` (`window.py`)."""
    return f"__ivm_o{index}"


class Shape(str, Enum):
    AGGREGATE = "aggregate"
    DISTINCT = "distinct"
    BAG = "bag"
    WINDOW = "window"  # one state row per result row, recomputed by partition (`window.py`)


@dataclass
class Plan:
    """Everything `render` needs to know about one model, independent of any refresh."""

    query: Query
    shape: Shape
    keys: list[exp.Expression]
    rules: list[AggregateRule]
    output_names: list[str]
    output_types: list[str]
    visible: list[exp.Expression]
    having: exp.Expression | None
    arg_types: list[str | None] = field(default_factory=list)  # Spark types, for the state
    # UNION ALL / UNION (`union.py`): one plan per branch, keyed like this one
    branches: list[Plan] = field(default_factory=list)
    # how many times a BAG state row is shown (None: its `__ivm_count__`)
    copies: exp.Expression | None = None

    @property
    def branch_queries(self) -> list[Query]:
        """The queries whose terms a run renders: a set operation's branches, else its own."""
        return [b.query for b in self.branches] or [self.query]

    @property
    def grouped(self) -> bool:
        """False only for an aggregate without GROUP BY, whose state is exactly one row."""
        return bool(self.keys)

    @property
    def key_columns(self) -> list[str]:
        return [f"__ivm_k{i}" for i in range(len(self.keys))]

    @property
    def helper_columns(self) -> list[str]:
        return [c for rule in self.rules for c in rule.state_columns()]

    @property
    def state_columns(self) -> list[str]:
        if self.shape is Shape.WINDOW:
            outputs = (output_column(i) for i in range(len(self.query.outputs)))
            return [*self.key_columns, COUNT, *outputs]
        return [*self.key_columns, COUNT, *self.helper_columns]

    def state_column_of(self, output: str) -> str | None:
        """The state column holding the result column `output` as it is (None: no such
        column, or one the view computes from the state, such as an average).

        >>> import sqlglot
        >>> p = Plan(None, Shape.AGGREGATE, [exp.column("k")], [], ["k", "avg_x"], ["int", "double"],
        ...          [exp.column("__ivm_k0"), sqlglot.parse_one("s / n")], None)
        >>> p.state_column_of("K"), p.state_column_of("avg_x")
        ('__ivm_k0', None)
        """
        for name, node in zip(self.output_names, self.visible):
            if name.lower() == output.lower() and isinstance(node, exp.Column):
                return node.name if node.name in self.state_columns else None
        return None

    @property
    def ranked_rules(self) -> list[ExtremeRule]:
        """MIN/MAX rules: a recompute lists their values from per-value counts (`extremes`)."""
        return [rule for rule in self.rules if isinstance(rule, ExtremeRule)]

    @property
    def may_recompute(self) -> bool:
        return any(
            rule.needs_recompute("s", "d") is not None or rule.joined_flag("j") is not None
            for rule in self.rules
        )

    def delta_projections(self) -> list[tuple[str, exp.Expression]]:
        """What each delta term selects before compaction: keys, aggregate arguments, and
        the columns read by recompute-only aggregates (so their changes are not compacted
        away)."""
        out: list[tuple[str, exp.Expression]] = list(zip(self.key_columns, self.keys))
        if self.shape is Shape.WINDOW:
            # every column a window or output reads: an update of any of them changes
            # its partition's result even where it leaves the partition key as it was
            read: list[exp.Column] = []
            for output in self.query.outputs:
                read.extend(c for c in output.find_all(exp.Column) if c not in read)
            return out + [(f"__ivm_r{n}", c) for n, c in enumerate(read)]
        for rule in self.rules:
            if isinstance(rule, RecomputeRule):
                for n, column in enumerate(rule.referenced_columns()):
                    out.append((f"__ivm_r{rule.index}_{n}", column))
            elif rule.agg.arg is not None:
                out.append((rule.arg_column, rule.agg.arg))
        return out


def _floating(dtype: str) -> bool:
    return exp.DataType.build(dtype, dialect="spark").this in (
        exp.DataType.Type.FLOAT,
        exp.DataType.Type.DOUBLE,
    )


def bag_key(node: exp.Expression, dtype: str) -> exp.Expression:
    """How a bag state keys an output of type `dtype`: floats and doubles by their text.

    A bag repeats its rows as they are, -0.0 apart from 0.0, but Spark's grouping, joins and
    `<=>` take the two for one value (and write 0.0): keyed by value, a bag state showed 0.0
    where its SELECT shows -0.0, and an update from one to the other cancelled out of the
    delta. The text keeps them apart and casts back exactly ('-0.0', 'NaN', 'Infinity').
    DISTINCT, UNION and the set operations group as Spark does and stay keyed by value.

    Example: `select x from t` over x = -0.0 keys '-0.0' and shows CAST('-0.0' AS DOUBLE).
    """
    if not _floating(dtype):
        return node
    return exp.cast(node, exp.DataType.build("string"))


def shown_key(key: exp.Expression, dtype: str) -> exp.Expression:
    """A bag state's key column as the output it keys (the inverse of `bag_key`)."""
    if not _floating(dtype):
        return key
    return exp.cast(key, exp.DataType.build(dtype, dialect="spark"))


def _replace(node: exp.Expression, mapping: dict[exp.Expression, exp.Expression]) -> exp.Expression:
    """Replace subtrees equal to a key of `mapping` (outermost first)."""

    def sub(n: exp.Expression) -> exp.Expression:
        found = mapping.get(n)
        return found.copy() if found is not None else n

    return node.copy().transform(sub, copy=False)


def plan(
    query: Query,
    output_columns: Sequence[tuple[str, str]],
    arg_types: Sequence[str | None],
    keep: int = KEEP,
) -> Plan:
    """Choose the rules for `query`.

    `output_columns` are the (name, type) pairs Spark gives the model's SELECT (DESCRIBE
    QUERY); `arg_types` the Spark types of each aggregate's argument (None without one);
    `keep` how many values a MIN/MAX state lists per group.
    """
    outputs = [o.unalias() for o in query.outputs]
    if len(outputs) != len(output_columns):
        raise UnsupportedQueryError(
            query.model,
            "a select list whose columns do not match Spark's result",
            f"{len(outputs)} expressions, {len(output_columns)} columns",
        )
    for step in query.steps:
        if step.kind is not JoinKind.INNER:
            equi_keys(query, step)  # refused now, not at the first refresh
    names = [name for name, _ in output_columns]
    types = [dtype for _, dtype in output_columns]
    if len({n.lower() for n in names}) != len(names):
        raise UnsupportedQueryError(
            query.model, "two output columns with the same name", ", ".join(names),
            "Give every column of the SELECT its own alias.",
        )  # fmt: skip

    if query.branches:
        # the state of a bag (UNION ALL) or of distinct rows (UNION), fed by every branch
        shape = Shape.DISTINCT if query.distinct else Shape.BAG
        branches = [plan(b, output_columns, [], keep) for b in query.branches]
        bag = shape is Shape.BAG and query.set_op is None
        for branch in branches:
            # a branch's rows are keyed as the union types them (`union._typed`): its outputs
            # widened to the union's types first (a float branch of a double union widens as
            # a float, not as its text), then, in a bag, as text (compacted by that text)
            raw = [o.unalias().copy() for o in branch.query.outputs]
            branch.keys = [
                bag_key(exp.cast(o, exp.DataType.build(t, dialect="spark")), t)
                if bag and _floating(t)
                else o
                for o, t in zip(raw, types)
            ]
        visible = [col(f"__ivm_k{i}") for i in range(len(outputs))]
        keys = [o.copy() for o in outputs]
        if query.set_op is not None:
            return _set_operation_plan(query, keys, names, types, visible, branches)
        if shape is Shape.BAG:
            visible = [shown_key(v, t) for v, t in zip(visible, types)]
        return Plan(query, shape, keys, [], names, types, visible, None, [], branches)
    if query.window_keys is not None:
        keys = [k.copy() for k in query.window_keys]
        visible = [col(output_column(i)) for i in range(len(outputs))]
        return Plan(query, Shape.WINDOW, keys, [], names, types, visible, None, list(arg_types))
    if not query.is_aggregate:
        shape = Shape.DISTINCT if query.distinct else Shape.BAG
        keys = [o.copy() for o in outputs]
        visible = [col(f"__ivm_k{i}") for i in range(len(keys))]
        if shape is Shape.BAG:
            keys = [bag_key(k, t) for k, t in zip(keys, types)]
            visible = [shown_key(v, t) for v, t in zip(visible, types)]
        return Plan(query, shape, keys, [], names, types, visible, None, list(arg_types))

    keys = [g.copy() for g in query.group_by]
    rules = [rule_for(i, agg, arg_types[i], keep) for i, agg in enumerate(query.aggregates)]
    mapping: dict[exp.Expression, exp.Expression] = {}
    for rule in rules:
        mapping[rule.agg.call] = rule.visible()
    for i, key in enumerate(keys):
        mapping.setdefault(key, col(f"__ivm_k{i}"))

    def lift(node: exp.Expression, where: str) -> exp.Expression:
        lifted = _replace(node, mapping)
        stray = [c for c in lifted.find_all(exp.Column) if c.table]
        if stray:
            raise UnsupportedQueryError(
                query.model,
                f"a column in {where} that is neither grouped nor aggregated",
                stray[0].sql(dialect="spark"),
            )
        return lifted

    visible = [lift(o, "the select list") for o in outputs]
    having = lift(query.having, "HAVING") if query.having is not None else None
    return Plan(query, Shape.AGGREGATE, keys, rules, names, types, visible, having, list(arg_types))


#: The synthetic argument of an INTERSECT / EXCEPT's side count (`union.side_marker`).
SIDE = "__ivm_a0"


def _set_operation_plan(
    query: Query,
    keys: list[exp.Expression],
    names: list[str],
    types: list[str],
    visible: list[exp.Expression],
    branches: list[Plan],
) -> Plan:
    """INTERSECT / EXCEPT: per distinct row its count over both operands and the left
    operand's count l (a COUNT of the side marker, `union.py`); r = count - l.

    Example: `a except all b` with row 1 twice in a and once in b -> count 3, l 2, shown
    2 - 1 = 1 time."""
    side = Aggregate(AggKind.COUNT, exp.Count(this=col(SIDE)), col(SIDE))
    rule = CountRule(0, side, "int")
    left = rule.visible()
    right = template(":c - :l", c=col(COUNT), l=left.copy())
    if query.distinct:
        shown = template(":l > 0", l=left)
        shown = exp.and_(
            shown, template(":r > 0" if query.set_op == "intersect" else ":r = 0", r=right)
        )
        return Plan(
            query, Shape.AGGREGATE, keys, [rule], names, types, visible, shown, [], branches
        )
    if query.set_op == "intersect":
        copies = template("LEAST(:l, :r)", l=left, r=right)
    else:
        copies = template(":l - :r", l=left, r=right)
    shown = template(":n > 0", n=copies.copy())
    return Plan(query, Shape.BAG, keys, [rule], names, types, visible, shown, [], branches, copies)
