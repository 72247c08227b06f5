"""render: a plan and one refresh's pinned versions -> the Spark SQL statements.

The statements of a refresh, in order (see `refresh.py` for who runs them):

1. the compacted view delta: every delta term of `delta.py` selects keys, aggregate
   arguments and its weight; identical rows are summed and zero weights dropped;
2. the delta table: that delta aggregated per key, with the stored state row's flags
   (is the group new, does it disappear, must it be recomputed; `state_merge.py`);
3. for MIN/MAX and non-decomposable aggregates, the flagged groups recomputed from the new
   base tables (only those groups);
4. one MERGE INTO the state table (keys matched null-safely with `<=>`) that applies 2 and 3
   and advances the metadata row's watermarks: the refresh's single, atomic commit
   (`state_merge.py`).

The model's relation is a view over the state table's data rows (`__ivm_row__ = 0`); it is
only (re)created by a full build.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.ir import KeyRange, Query
from dbt.adapters.spark_ivm.compiler.operators import bag_input
from dbt.adapters.spark_ivm.compiler.operators.aggregates import (
    COUNT,
    RECOMPUTE_FLAG,
    RECOMPUTED,
    ExtremeRule,
)
from dbt.adapters.spark_ivm.compiler.operators.aggregates.extremes import VALUE
from dbt.adapters.spark_ivm.compiler.operators.delta import (
    DELTA,
    NEW,
    OLD,
    WEIGHT,
    LeafRenderer,
    Prefix,
    Term,
    TermRenderer,
    Version,
)
from dbt.adapters.spark_ivm.compiler.operators.join import join_delta_terms
from dbt.adapters.spark_ivm.compiler.optimize import factored, passes
from dbt.adapters.spark_ivm.compiler.optimize.pruning import key_links
from dbt.adapters.spark_ivm.compiler.plan import Plan, Shape
from dbt.adapters.spark_ivm.compiler.sql.state_table import META, ROW, with_meta_row
from dbt.adapters.spark_ivm.compiler.sql.templates import (
    col,
    null_safe_match,
    sql,
    table,
    template,
    union_all,
)

MATCHED = "__ivm_matched"
NEW_COUNT = "__ivm_new_count"


@dataclass(frozen=True)
class Versions:
    """The snapshots one refresh reads each base relation at (None: the table had none)."""

    old: Mapping[str, int | None]
    new: Mapping[str, int | None]
    logs: Mapping[str, str]
    # Unchanged relations read as the table is now, not `VERSION AS OF` their snapshot, whose
    # schema is older than the table's (`base_tables.TableMetadata.stale`).
    live: frozenset[str] = frozenset()
    # Earlier states' tables read as the SELECT that computes their rows from the base tables
    # (a model rebuilt past them, `runtime/from_bases.py`), by state table.
    computed: Mapping[str, exp.Expression] = field(default_factory=dict)

    def changed(self, query: Query) -> frozenset[int]:
        """Indexes of the inputs whose relation has a captured delta."""
        return frozenset(i for i, inp in enumerate(query.inputs) if inp.relation in self.logs)


def leaf_at(query: Query, versions: Versions | None) -> LeafRenderer:
    """A LeafRenderer reading inputs at pinned snapshots (or the live table when None); an
    input that is a bag state repeats each row as its view does (`bag_input.py`)."""

    def leaf(index: int, version: Version) -> exp.Expression:
        relation = query.inputs[index].relation
        body = rows(index, version)
        copies = query.weights.get(relation)
        return body if copies is None else bag_input.repeated(body, copies)

    def rows(index: int, version: Version) -> exp.Expression:
        relation = query.inputs[index].relation
        if version == DELTA:
            body = exp.Select().select(exp.Star()).from_(table(versions.logs[relation]))
            return exp.Subquery(this=body)
        if versions is None:
            return table(relation)
        if relation in versions.computed:
            return exp.Subquery(this=versions.computed[relation].copy())
        snap = (versions.old if version == OLD else versions.new).get(relation)
        if relation in versions.live and snap is not None:
            return exp.Subquery(this=exp.Select().select(exp.Star()).from_(table(relation)))
        if snap is None:
            body = exp.Select().select(exp.Star()).from_(table(relation)).where(exp.false())
        else:
            body = at_snapshot(relation, snap)
        return exp.Subquery(this=body)

    return leaf


def at_snapshot(relation: str, snapshot: int) -> exp.Expression:
    """The relation's rows at a snapshot.

    >>> at_snapshot("db.t", 7).sql("spark")
    'SELECT * FROM `db`.`t` VERSION AS OF 7'
    """
    return template(f"SELECT * FROM :t VERSION AS OF {int(snapshot)}", t=table(relation))


def full_term(query: Query) -> Term:
    """The whole query over its inputs at the new snapshots."""
    return Term(base=Prefix(len(query.inputs) - 1, NEW))


def _group(select: exp.Select, keys: list[exp.Expression]) -> exp.Select:
    return select.group_by(*(k.copy() for k in keys)) if keys else select


def _values_select(plan: Plan, renderer: TermRenderer, term: Term, rule: ExtremeRule) -> exp.Select:
    """Per key, the first distinct non-NULL argument values of `rule` in `term`, each with
    its count (`ExtremeRule.first_values`)."""
    arg = rule.arg()
    projections = [*zip(plan.key_columns, plan.keys), (VALUE, arg)]
    rows = renderer.render(term, projections, with_weight=False)
    rows = rows.where(exp.not_(exp.Is(this=arg.copy(), expression=exp.null())))
    return rule.first_values(rows, plan.key_columns)


def _with_ranked_lists(
    plan: Plan,
    main: exp.Select,
    names: list[str],
    lists: list[tuple[ExtremeRule, exp.Select, tuple[str, str]]],
) -> exp.Select:
    """`main` (columns `names`) with each MIN/MAX rule's ranked list joined on the keys."""
    if not lists:
        return main
    select = exp.Select().select(*(col(n, "__ivm_m") for n in names))
    select = select.from_(exp.alias_(exp.Subquery(this=main), "__ivm_m", table=True))
    for rule, values, list_names in lists:
        select = rule.joined_lists(select, values, plan.key_columns, list_names)
    return select


def initial_state_select(plan: Plan, renderer: TermRenderer, meta: str) -> exp.Expression:
    """The state computed from scratch: keys, __ivm_count__ and every rule's helpers, plus
    the metadata row (`__ivm_row__ = 1`) holding the watermarks of what was read."""
    projections: list[tuple[str, exp.Expression]] = [
        (ROW, exp.Literal.number(0)),
        (META, exp.cast(exp.null(), exp.DataType.build("string"))),
    ]
    projections.extend(zip(plan.key_columns, plan.keys))
    projections.append((COUNT, exp.Count(this=exp.Star())))
    for rule in plan.rules:
        projections.extend(rule.initial().items())
    term = full_term(plan.query)
    select = _group(renderer.render(term, projections, with_weight=False), plan.keys)
    return with_meta_row(select, meta, [n for n, _ in projections][2:])


def compacted_delta_select(
    plan: Plan,
    renderer: TermRenderer,
    key_ranges: Mapping[tuple[int, str], KeyRange] | None = None,
) -> exp.Select | None:
    """The view delta's rows before aggregation, identical rows summed, zero weights dropped
    (None when no input of the model changed). The terms are rewritten by the optimiser's
    passes in their order first (`optimize/passes.py`): `key_ranges` (per delta input and
    column) restrict the other inputs of each term to the touched join keys."""
    terms = join_delta_terms(renderer)
    if not terms:
        return None
    projections = plan.delta_projections()
    links = key_links(plan.query)
    rewritten = passes.optimised(terms, passes.Known(plan.query, links, key_ranges, projections))
    parts = [renderer.render(t, projections) for t in rewritten.plain]
    if rewritten.factored:
        parts.append(factored.render(renderer, rewritten.factored, links, key_ranges, projections))
    union = union_all(parts)
    # The builders below extend what this function just built: copying it at every step
    # made rendering quadratic in the number of terms (seconds for a few outer steps).
    names = [name for name, _ in projections]
    inner = exp.alias_(exp.Subquery(this=union), "__ivm_terms", table=True)
    select = exp.Select().from_(inner)
    for name in names:
        select = select.select(col(name), copy=False)
    weight = template("SUM(:w)", w=col(WEIGHT))
    select = select.select(exp.alias_(weight, WEIGHT, quoted=True), copy=False)
    if names:
        select = select.group_by(*(col(n) for n in names), copy=False)
    return select.having(template("SUM(:w) <> 0", w=col(WEIGHT)), copy=False)


def create_scratch_sql(name: str, select: exp.Expression, eager: bool = True) -> list[str]:
    """(Re)create a refresh-scoped relation (a log, the delta, the recomputed groups) as a
    cached session view.

    `CACHE TABLE .. AS` computes the rows once, eagerly, into executor memory: every later
    step reads them without recomputing, and nothing is written to storage (an Iceberg
    scratch table cost a commit and a purge, about a second each, even for ten rows). Its
    exact in-memory size also lets Spark broadcast a small delta into the joins that read it.
    Should the cache be evicted, Spark recomputes the same rows: the plan reads pinned
    snapshots only. A cached view keeps its query's text, so each statement that reads it
    parses and analyses that query again before it finds the cached rows; with a local Spark
    the session method computes scratch relations as local checkpoints instead
    (`connection_executor.ConnectionExecutor.scratch_view`), whose plan is their rows.
    Not `eager`: the first statement that reads the view computes the rows (`CACHE LAZY TABLE`).

    >>> create_scratch_sql("__ivm_log_0", exp.select("1"), eager=False)[1]
    'CACHE LAZY TABLE `__ivm_log_0` AS SELECT 1'
    """
    cache = "CACHE TABLE" if eager else "CACHE LAZY TABLE"
    return [drop_scratch_sql(name), f"{cache} {sql(table(name))} AS {sql(select)}"]


def drop_scratch_sql(name: str) -> str:
    """Drop a scratch view and release its cached rows."""
    return f"DROP VIEW IF EXISTS {sql(table(name))}"


def typed(node: exp.Expression, column: str, types: Mapping[str, str]) -> exp.Expression:
    """`node` cast to the state column's Spark type in `types` (as is when not listed)."""
    dtype = types.get(column.lower())
    return exp.cast(node, exp.DataType.build(dtype, dialect="spark")) if dtype else node


def recompute_select(plan: Plan, renderer: TermRenderer, delta: str) -> exp.Select:
    """MIN/MAX and non-decomposable aggregates of the flagged groups, recomputed from the new
    base tables restricted to those groups' keys; other groups are not read."""
    projections = list(zip(plan.key_columns, plan.keys))
    for rule in plan.rules:
        projections.extend((RECOMPUTED + n, node) for n, node in rule.recompute().items())
    # An ungrouped model whose recomputed aggregates are all MIN/MAX lists projects nothing
    # here but must still be its one row (`SELECT FROM ..` does not parse): a COUNT(*) that
    # the lists' join below does not select keeps it one row, even over no rows.
    main = projections or [("__ivm_one", template("COUNT(*)"))]
    term = full_term(plan.query)
    if plan.grouped:
        flagged = (
            exp.Select()
            .select(exp.Literal.number(1))
            .from_(exp.alias_(table(delta), "r", table=True))
            .where(
                exp.and_(
                    col(RECOMPUTE_FLAG, "r"),
                    template(":n > 0", n=col(NEW_COUNT, "r")),
                    null_safe_match([col(k, "r") for k in plan.key_columns], plan.keys),
                )
            )
        )
        term = Term(base=term.base, filters=(exp.Exists(this=flagged),))
    select = _group(renderer.render(term, main, with_weight=False), plan.keys)
    lists = [
        (
            rule,
            _values_select(plan, renderer, term, rule),
            (RECOMPUTED + rule.top, RECOMPUTED + rule.full),
        )
        for rule in plan.ranked_rules
    ]
    return _with_ranked_lists(plan, select, [n for n, _ in projections], lists)


def recompute_reads(plan: Plan) -> int:
    """How often `recompute_select` reads the model's inputs whole: once for the aggregates
    and once per MIN/MAX value list it ranks (each list's sample read stops at its LIMIT)."""
    return 1 + len(plan.ranked_rules)


def view_select(plan: Plan, state: str) -> str:
    """The model's relation: visible columns only, each cast to Spark's type for the SELECT."""
    select = exp.Select()
    for node, name, dtype in zip(plan.visible, plan.output_names, plan.output_types):
        typed = exp.cast(node.copy(), exp.DataType.build(dtype, dialect="spark"))
        select = select.select(exp.alias_(typed, name, quoted=True))
    select = select.from_(table(state)).where(template(":r = 0", r=col(ROW)))
    if plan.having is not None:
        select = select.where(plan.having.copy())
    if plan.shape is Shape.BAG:
        # Each distinct row is stored once with its multiplicity; repeat it that many times.
        return _bag_view(select, plan.copies or col(COUNT))
    return sql(select)


def _bag_view(select: exp.Select, copies: exp.Expression) -> str:
    return sql(select.lateral(bag_input.repeat_lateral(copies)))


def probe_select(query: Query, nodes: list[exp.Expression]) -> str:
    """`SELECT nodes FROM <the model's FROM> WHERE FALSE`: for DESCRIBE QUERY of their types."""
    renderer = TermRenderer(query, leaf_at(query, None))
    projections = [(f"p{i}", n) for i, n in enumerate(nodes)] or [("p0", exp.Literal.number(1))]
    select = renderer.render(full_term(query), projections, with_weight=False, with_where=False)
    return sql(select.where(exp.false()))
