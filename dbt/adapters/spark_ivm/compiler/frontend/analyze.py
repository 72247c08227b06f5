"""analyze: a model's compiled SELECT -> the IR in `ir.py`, or an error naming the construct.

Normalisation (`normalise.py`: sqlglot's qualify, CTE inlining, merging of filtered sub-queries into
joins, then sqlglot's eliminate_subqueries, merge_subqueries, eliminate_ctes) makes sub-queries in
FROM and CTEs that flatten into one SELECT acceptable, and every column qualified with its input:

>>> q = analyze("select k, sum(x) s from db.t where x > 0 group by k", "m",
...             {"db.t": [("k", "string"), ("x", "int")]}, "db")
>>> [o.sql("spark") for o in q.outputs]
['t.k AS k', 'SUM(t.x) AS s']
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from dbt.adapters.spark_ivm.compiler.errors import UnsupportedQueryError
from dbt.adapters.spark_ivm.compiler.errors import fragment as _fragment
from dbt.adapters.spark_ivm.compiler.frontend.normalise import normalise
from dbt.adapters.spark_ivm.compiler.ir import (
    AggKind,
    Aggregate,
    Input,
    JoinKind,
    JoinStep,
    Query,
)
from dbt.adapters.spark_ivm.compiler.operators import bag_input, union, window
from dbt.adapters.spark_ivm.compiler.operators.aggregates.filtered import unfilter
from dbt.adapters.spark_ivm.compiler.operators.aggregates.moments import moment_variant
from dbt.adapters.spark_ivm.compiler.sql.dialect import any_as_bool_or

DIALECT = "spark"

# Functions whose value changes between runs: a view over them cannot be maintained.
NONDETERMINISTIC_CLASSES: tuple[type[exp.Expression], ...] = (
    exp.Rand,
    exp.Randn,
    exp.Uuid,
    exp.CurrentTimestamp,
    exp.CurrentDate,
    exp.CurrentTime,
    exp.CurrentUser,
)
NONDETERMINISTIC_NAMES = frozenset(
    {
        "rand", "random", "randn", "uuid", "now", "current_timestamp", "current_date",
        "localtimestamp", "current_timezone", "monotonically_increasing_id",
        "spark_partition_id", "input_file_name", "input_file_block_start",
        "input_file_block_length", "shuffle", "try_reflect", "reflect", "java_method",
        "unix_timestamp", "current_user", "user", "session_user",
    }
)  # fmt: skip


def relation_key(table: exp.Table, default_db: str) -> str:
    """`db.table` in lower case, `catalog.db.table` where the SQL names the catalog: how
    the compiler names a base relation.

    >>> tables = sqlglot.parse_one("select * from t, s.u, Lake.S.V", read="spark")
    >>> [relation_key(t, "db") for t in tables.find_all(exp.Table)]
    ['db.t', 's.u', 'lake.s.v']
    """
    db = table.db or default_db
    if table.catalog:
        return f"{table.catalog}.{db}.{table.name}".lower()
    return f"{db}.{table.name}".lower()


def base_tables(tree: exp.Expression, default_db: str) -> list[tuple[exp.Table, str]]:
    """Each reference to a base relation in `tree` (CTE names and unnamed tables excluded),
    with the relation's name (`relation_key`)."""
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    return [
        (table, relation_key(table, default_db))
        for table in tree.find_all(exp.Table)
        if table.name and not (not table.db and table.name.lower() in ctes)
    ]


def base_relations(sql: str, default_db: str, model: str = "?") -> list[str]:
    """The base relations a SELECT reads (CTE names excluded), in order of first use."""
    return list(_base_relations(sql, default_db, model))


# A run asks this of the same few texts 7-8 times (chain, walk, facts, from_bases): each
# parse of a TPC-H query is 5-15 ms.
@functools.lru_cache(maxsize=256)
def _base_relations(sql: str, default_db: str, model: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(key for _, key in base_tables(_parse(sql, model), default_db)))


def parse_model_sql(sql: str, model: str = "?") -> exp.Expression:
    """A model's one SELECT as the compiler reads it (an error naming the model otherwise)."""
    return _parse(sql, model)


def _parse(sql: str, model: str) -> exp.Expression:
    try:
        statements = [s for s in sqlglot.parse(sql, dialect=DIALECT) if s is not None]
    except ParseError as e:
        raise UnsupportedQueryError(model, "SQL that sqlglot cannot parse", str(e)[:200]) from e
    if len(statements) != 1:
        raise UnsupportedQueryError(model, "more than one statement", f"{len(statements)} found")
    return any_as_bool_or(statements[0])


def _check_constructs(tree: exp.Expression, model: str) -> None:
    """Refuse, before any rewrite, what no rule maintains (named with its SQL)."""
    if not isinstance(tree, exp.Select):
        raise UnsupportedQueryError(model, "a statement that is not a SELECT", _fragment(tree))
    checks: list[tuple[type[exp.Expression], str]] = [
        (
            exp.SetOperation,
            "a set operation inside an expression (one is maintained as a whole model or as a sub-query in FROM)",
        ),
        (exp.Limit, "LIMIT"),
        (exp.Offset, "OFFSET"),
        (exp.Fetch, "FETCH"),
        (exp.Lateral, "LATERAL VIEW / generator"),
        (exp.Pivot, "PIVOT / UNPIVOT"),
        (exp.TableSample, "TABLESAMPLE"),
        (exp.Cube, "CUBE"),
        (exp.Rollup, "ROLLUP"),
        (exp.GroupingSets, "GROUPING SETS"),
        (exp.Version, "time travel (VERSION / TIMESTAMP AS OF)"),
        (exp.Explode, "generator function (explode)"),
        (exp.Posexplode, "generator function (posexplode)"),
        (exp.Inline, "generator function (inline)"),
    ]
    for lateral in tree.find_all(exp.Lateral):
        select = lateral.parent
        source = select.args.get("from_") if isinstance(select, exp.Select) else None
        if source is not None and source.this.name.lower().endswith(bag_input.STATE_SUFFIX):
            raise UnsupportedQueryError(
                model,
                "reading an ivm model that keeps a bag of rows (a SELECT without GROUP BY or "
                "DISTINCT, or a UNION ALL: its relation repeats each stored row)",
                source.this.name,
                "Aggregate or select DISTINCT in the upstream model, or read its base tables here.",
            )
    for cls, construct in checks:
        node = tree.find(cls)
        if node is not None:
            raise UnsupportedQueryError(model, construct, _fragment(node.parent or node))
    for func in tree.find_all(exp.Func):
        name = func.name.lower() if isinstance(func, exp.Anonymous) else func.sql_name().lower()
        if isinstance(func, NONDETERMINISTIC_CLASSES) or name in NONDETERMINISTIC_NAMES:
            raise UnsupportedQueryError(
                model,
                f"non-deterministic function {name}()",
                _fragment(func),
                "Its value changes on every run, so no refresh can keep the view equal to "
                "the SELECT. Compute it in a downstream model instead.",
            )
    if tree.args.get("distinct") is not None and tree.args["distinct"].args.get("on"):
        raise UnsupportedQueryError(model, "DISTINCT ON", _fragment(tree.args["distinct"]))


def _input_of(node: exp.Expression, model: str, schemas: Mapping, default_db: str) -> Input:
    if isinstance(node, exp.Subquery):
        raise UnsupportedQueryError(
            model,
            "a sub-query in FROM that does not flatten into one SELECT "
            "(e.g. it aggregates, is DISTINCT, or is joined)",
            _fragment(node),
        )
    if not isinstance(node, exp.Table) or not node.name:
        raise UnsupportedQueryError(model, "this FROM item", _fragment(node))
    key = relation_key(node, default_db)
    if key not in schemas:
        raise UnsupportedQueryError(model, "an unknown relation", key)
    return Input(alias=node.alias_or_name, relation=key, columns=tuple(schemas[key]))


def _join_kind(join: exp.Join, model: str) -> JoinKind:
    side = (join.side or "").upper()
    kind = (join.kind or "").upper()
    if kind in ("SEMI", "ANTI") or join.args.get("method"):
        raise UnsupportedQueryError(model, f"{kind or join.args['method']} join", _fragment(join))
    if join.args.get("using"):
        raise UnsupportedQueryError(model, "JOIN ... USING", _fragment(join))
    if side == "LEFT":
        return JoinKind.LEFT
    if side == "RIGHT":
        return JoinKind.RIGHT
    if side == "FULL":
        return JoinKind.FULL
    return JoinKind.INNER


def _aggregate_of(call: exp.Expression, model: str) -> Aggregate:
    arg = call.this if isinstance(call, exp.AggFunc) else None
    if isinstance(call, exp.Count):
        if isinstance(arg, exp.Star):
            return Aggregate(AggKind.COUNT_STAR, call, None)
        if isinstance(arg, exp.Distinct) or call.args.get("expressions"):
            return Aggregate(AggKind.RECOMPUTE, call, None)
        return Aggregate(AggKind.COUNT, call, arg)
    if isinstance(arg, exp.Distinct):
        return Aggregate(AggKind.RECOMPUTE, call, None)
    simple = {
        exp.Sum: AggKind.SUM,
        exp.Avg: AggKind.AVG,
        exp.Min: AggKind.MIN,
        exp.Max: AggKind.MAX,
    }
    for cls, kind in simple.items():
        if type(call) is cls and not call.args.get("expressions"):
            return Aggregate(kind, call, arg)
    if moment_variant(call) is not None and arg is not None and not call.args.get("expressions"):
        return Aggregate(AggKind.MOMENT, call, arg)
    return Aggregate(AggKind.RECOMPUTE, call, None)


def _outermost_aggregates(node: exp.Expression) -> list[exp.Expression]:
    """Aggregate calls not nested in another aggregate (nesting is refused by Spark itself)."""
    found: list[exp.Expression] = []
    for agg in node.find_all(exp.AggFunc):
        # `sum(x) OVER (..)` is a window function (`window.py`), not an aggregate
        if agg.find_ancestor(exp.AggFunc, exp.Window) is None and not isinstance(
            agg.parent, exp.Window
        ):
            found.append(agg)
    return found


def analyze(
    sql: str,
    model: str,
    schemas: Mapping[str, Sequence[tuple[str, str]]],
    default_db: str,
) -> Query:
    """Parse, check and normalise a model's SELECT into a `Query`.

    `schemas` maps every base relation (`db.table`, see `base_relations`) to its columns.
    Raises `UnsupportedQueryError` naming the first construct no rule can maintain.
    """
    tree = _parse(sql, model)
    if isinstance(tree, exp.SetOperation):
        return union.analyze_set_operation(
            tree, sql, model, lambda branch: analyze(branch, model, schemas, default_db)
        )
    weights = bag_input.strip_bag_views(tree, lambda t: relation_key(t, default_db))
    _check_constructs(tree, model)
    tree = unfilter(normalise(tree, model, schemas, default_db), model)
    if tree.args.get("with_"):
        raise UnsupportedQueryError(
            model, "a CTE that does not flatten into one SELECT", _fragment(tree.args["with_"])
        )
    assert isinstance(tree, exp.Select)
    for sub in tree.find_all(exp.Subquery, exp.Exists, exp.In):
        if isinstance(sub, exp.In) and not sub.args.get("query"):
            continue
        if isinstance(sub, exp.Subquery) and sub.parent is tree.args.get("from_"):
            continue
        if isinstance(sub, exp.Subquery) and isinstance(sub.parent, exp.Join):
            continue
        raise UnsupportedQueryError(model, "a sub-query in an expression", _fragment(sub))

    from_ = tree.args.get("from_")
    if from_ is None:
        raise UnsupportedQueryError(model, "a SELECT without FROM", _fragment(tree))
    inputs = [_input_of(from_.this, model, schemas, default_db)]
    steps: list[JoinStep] = []
    for join in tree.args.get("joins") or []:
        kind = _join_kind(join, model)
        inp = _input_of(join.this, model, schemas, default_db)
        inputs.append(inp)
        on = join.args.get("on")
        if on is None:
            if kind is not JoinKind.INNER:
                raise UnsupportedQueryError(model, "an outer join without ON", _fragment(join))
            on = exp.true()
        steps.append(JoinStep(kind, len(inputs) - 1, on))
    aliases = [i.alias for i in inputs]
    if len(set(aliases)) != len(aliases):
        raise UnsupportedQueryError(model, "two FROM items with the same alias", ", ".join(aliases))

    where = tree.args["where"].this if tree.args.get("where") else None
    group = tree.args.get("group")
    group_by = list(group.expressions) if group else []
    if group is not None and group.args.get("all"):
        raise UnsupportedQueryError(model, "GROUP BY ALL", _fragment(group))
    having = tree.args["having"].this if tree.args.get("having") else None
    outputs = list(tree.expressions)
    distinct = tree.args.get("distinct") is not None

    if where is not None and where.find(exp.AggFunc):
        raise UnsupportedQueryError(model, "an aggregate in WHERE", _fragment(where))
    for step in steps:
        if step.on.find(exp.AggFunc):
            raise UnsupportedQueryError(model, "an aggregate in ON", _fragment(step.on))

    calls: list[exp.Expression] = []
    for node in [*outputs, *([having] if having is not None else [])]:
        for call in _outermost_aggregates(node):
            if call not in calls:
                calls.append(call)
    aggregates = [_aggregate_of(call, model) for call in calls]
    is_aggregate = bool(group_by) or bool(aggregates)
    if having is not None and not is_aggregate:
        raise UnsupportedQueryError(model, "HAVING without aggregation", _fragment(having))
    if is_aggregate and distinct:
        raise UnsupportedQueryError(
            model, "SELECT DISTINCT together with GROUP BY or aggregates", _fragment(tree)
        )

    notes: list[str] = window.check(tree, model, is_aggregate, distinct)
    if tree.args.get("order"):
        notes.append("ORDER BY ignored: a maintained relation has no row order")
    query = Query(
        model=model,
        sql=sql,
        inputs=inputs,
        steps=steps,
        where=where,
        group_by=group_by,
        aggregates=aggregates,
        outputs=outputs,
        having=having,
        distinct=distinct,
        is_aggregate=is_aggregate,
        notes=notes,
        window_keys=window.partition_keys(outputs) if window.windows_of(tree) else None,
        weights={r: c for r, c in weights.items() if any(i.relation == r for i in inputs)},
    )
    _check_column_types(query)
    return query


def _check_column_types(query: Query) -> None:
    """Refuse base columns whose changes cannot be captured: a change log groups rows by
    the columns the model reads, and Spark cannot compare or group maps."""
    for relation, names in query.columns_read().items():
        types = dict(query.columns_of(relation))
        for name in names:
            if "map<" in types[name].lower():
                raise UnsupportedQueryError(
                    query.model,
                    "a base column of map type (maps cannot be compared, so their changes "
                    "cannot be captured)",
                    f"{relation}.{name} {types[name]}",
                    "Read what you need of it in the SELECT of a view or table model "
                    "upstream (e.g. m['key'] AS key), or use materialized='table'.",
                )
