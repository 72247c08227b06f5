"""views: a base relation that is a view is read through its query (issue 12).

A dbt project reads its sources through staging views, and marts read intermediate views.
A view has no snapshots, so no capture can read its changes; its query can be maintained
instead. Every reference to a view is replaced by a sub-query of the view's SQL (views over
views down to their tables), and the model is maintained over the tables underneath: a view
that filters and projects flattens into the model's joins (`normalise.py`), one that
aggregates or is DISTINCT becomes a sub-query state (`stages.py`).

    db.stg_orders  =  select id, lower(status) status from raw.orders where id is not null
    model          =  select status, count(*) n from db.stg_orders group by status
    ->  select status, count(*) n
        from (select id, lower(status) as status from raw.orders where id is not null)
          as stg_orders
        group by status

The expansion is part of the SQL the state is built from, so its hash changes when a view's
definition does and the model is rebuilt; the view properties record each view's digest
(`VIEWS`) so the log can say which view changed. The model's own SQL (`ivm.sql`, which
`ivm_consistent` runs) still reads the views: the relation is compared with the views as
they are now.

Unqualified table names in a view's SQL resolve in a Hive view's `View Catalog and Namespace`.
An Iceberg view (every view of the embedded catalog) with such a name is refused: Spark 3.5
resolves it in whatever database the reader has selected, so its meaning is not fixed (dbt's
ref() and source() always qualify).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from dbt.adapters.spark_ivm.compiler.errors import UnsupportedQueryError
from dbt.adapters.spark_ivm.compiler.frontend.analyze import base_relations, relation_key
from dbt.adapters.spark_ivm.compiler.frontend.normalise import inline_ctes
from dbt.adapters.spark_ivm.compiler.sql.templates import sql, table

DIALECT = "spark"
#: View property of an ivm model: {view: digest of its definition} for the views it reads.
VIEWS = "ivm.views"
#: Views over views deeper than this are refused (Spark refuses cyclic views; this guards
#: against a catalog that does not).
MAX_DEPTH = 16

Fetch = Callable[[str], list[tuple]]


@dataclass(frozen=True)
class ViewDefinition:
    """What a view reads: its SQL, its column names, and the database of unqualified names
    in that SQL (None: the SQL has none)."""

    relation: str
    text: str
    columns: tuple[str, ...]
    namespace: str | None

    @property
    def digest(self) -> str:
        body = json.dumps([self.text, list(self.columns), self.namespace])
        return hashlib.sha256(body.encode()).hexdigest()[:16]


def _parse(text: str, model: str, what: str) -> exp.Expression:
    try:
        return sqlglot.parse_one(text, dialect=DIALECT)
    except ParseError as e:
        raise UnsupportedQueryError(model, f"{what} that sqlglot cannot parse", str(e)[:200]) from e


def _cte_names(tree: exp.Expression) -> set[str]:
    return {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}


def _references(tree: exp.Expression) -> list[exp.Table]:
    """The table references of `tree` that are relations (not CTE names)."""
    ctes = _cte_names(tree)
    return [
        t for t in tree.find_all(exp.Table) if t.name and not (not t.db and t.name.lower() in ctes)
    ]


def unqualified(text: str, model: str) -> list[str]:
    """The table names in a view's SQL that carry no database (CTE names excepted)."""
    return [t.name for t in _references(_parse(text, model, "a view's SQL")) if not t.db]


def view_query(view: ViewDefinition, model: str) -> exp.Expression:
    """The view's SQL as a query to put in place of the view: its CTEs inlined, every table
    qualified with a database, and its result columns named as the view's.

    >>> v = ViewDefinition("db.v", "select a + 1, b from t", ("(a + 1)", "b"), "raw")
    >>> view_query(v, "m").sql("spark")
    'SELECT a + 1 AS `(a + 1)`, b AS `b` FROM raw.t'
    """
    tree = _parse(view.text, model, f"the SQL of view {view.relation}")
    if isinstance(tree, exp.Select):
        tree = inline_ctes(tree)
    for ref in _references(tree):
        if ref.db:
            continue
        if view.namespace is None:
            raise UnsupportedQueryError(
                model,
                f"view {view.relation} reading table {ref.name} without a database (Spark "
                "resolves it in the reader's current database)",
                view.text[:120],
                f"Qualify the table in the view (e.g. `<schema>.{ref.name}`, as dbt's ref() "
                "and source() do).",
            )
        ref.set("db", exp.to_identifier(view.namespace))
    if (
        isinstance(tree, exp.Select)
        and not any(isinstance(e, exp.Star) or e.find(exp.Star) for e in tree.expressions)
        and len(tree.expressions) == len(view.columns)
    ):
        # Spark names the view's columns (e.g. `(a + 1)` for an unaliased expression);
        # the model refers to those names.
        tree.set(
            "expressions",
            [
                exp.alias_(e.unalias() if isinstance(e, exp.Alias) else e, name, quoted=True)
                for e, name in zip(tree.expressions, view.columns)
            ],
        )
    return tree


def _expand_tree(
    tree: exp.Expression,
    views: Mapping[str, ViewDefinition],
    default_db: str,
    model: str,
    path: tuple[str, ...],
) -> exp.Expression:
    if len(path) > MAX_DEPTH:
        raise UnsupportedQueryError(
            model, f"views nested more than {MAX_DEPTH} deep", " -> ".join(path[:4]) + " ..."
        )
    for ref in _references(tree):
        key = relation_key(ref, default_db)
        view = views.get(key)
        if view is None:
            continue
        if key in path:
            raise UnsupportedQueryError(model, "a view that reads itself", " -> ".join(path))
        inner = _expand_tree(
            view_query(view, model),
            views,
            view.namespace or key.split(".")[0],
            model,
            (*path, key),
        )
        alias = exp.TableAlias(this=exp.to_identifier(ref.alias_or_name))
        ref.replace(exp.Subquery(this=inner, alias=alias))
    return tree


def expand(model_sql: str, views: Mapping[str, ViewDefinition], default_db: str, model: str) -> str:
    """The model's SQL with every view in `views` replaced by its query (recursively).

    >>> v = ViewDefinition("db.v", "select k, x from raw.t where x > 0", ("k", "x"), None)
    >>> expand("select k, sum(x) s from db.v group by k", {"db.v": v}, "db", "m")
    'SELECT k, SUM(x) AS s FROM (SELECT k AS `k`, x AS `x` FROM raw.t WHERE x > 0) AS v GROUP BY k'
    """
    if not views:
        return model_sql
    tree = _parse(model_sql, model, "SQL")
    return sql(_expand_tree(tree, views, default_db, model, ()))


# -- reading the catalog (the only part that runs SQL) -------------------------------------


def _view_names(fetch: Fetch, database: str) -> set[str]:
    """The (non-temporary) views of `database`; none if it cannot be listed."""
    try:
        rows = fetch(f"SHOW VIEWS IN {sql(exp.to_identifier(database, quoted=True))}")
    except Exception:  # noqa: BLE001 - no such database: planning reports the missing table
        return set()
    # isTemporary: a bool from the session, maybe text over Thrift
    return {str(r[1]).lower() for r in rows if len(r) >= 3 and str(r[2]).lower() != "true"}


def _created_text(fetch: Fetch, relation: str) -> str | None:
    """A view's SQL from `SHOW CREATE TABLE`: a view of a named Iceberg catalog (Spark's v2
    views) shows no `View Text` in `DESCRIBE TABLE EXTENDED`.

    >>> ddl = "CREATE VIEW lake.db.v (k) TBLPROPERTIES ('ivm.sql' = 'it''s') AS SELECT k FROM db.t"
    >>> _created_text(lambda statement: [(ddl,)], "db.v")
    'SELECT k FROM db.t'
    """
    try:
        rows = fetch(f"SHOW CREATE TABLE {sql(table(relation))}")
        created = sqlglot.parse_one(str(rows[0][0]), read="spark")
    except (ParseError, IndexError):
        return None
    query = created.expression if isinstance(created, exp.Create) else None
    return query.sql("spark") if isinstance(query, exp.Query) else None


def read_definition(fetch: Fetch, relation: str, model: str) -> ViewDefinition:
    """A view's SQL, columns and default namespace, from `DESCRIBE TABLE EXTENDED`."""
    rows = fetch(f"DESCRIBE TABLE EXTENDED {sql(table(relation))}")
    columns: list[str] = []
    details: dict[str, str] = {}
    in_details = False
    for row in rows:
        name = str(row[0] or "").strip()
        if name.startswith("# Detailed"):
            in_details = True
        elif in_details:
            details[name] = str(row[1] or "")
        elif name and not name.startswith("#"):
            columns.append(name)
    text = details.get("View Text") or details.get("View Original Text")
    if not text:
        text = _created_text(fetch, relation)
    return definition(relation, text, columns, details.get("View Catalog and Namespace", ""), model)


def definition(
    relation: str, text: str | None, columns: Sequence[str], spark_namespace: str, model: str
) -> ViewDefinition:
    """A view's definition from what `DESCRIBE TABLE EXTENDED` shows of it (`View Text`, its
    columns, `View Catalog and Namespace`), read in SQL or from the session's catalog.

    >>> definition("db.v", "SELECT k FROM t", ["k"], "spark_catalog.db", "m").namespace
    'db'
    >>> definition("db.v", "SELECT k FROM db.t", ["k"], "spark_catalog.db", "m").namespace
    """
    if not text:
        raise UnsupportedQueryError(
            model, f"view {relation} whose SQL cannot be read", "DESCRIBE TABLE EXTENDED"
        )
    namespace: str | None = None
    # Hive views record the database their names resolve in. Iceberg views record a default
    # namespace too, but Spark 3.5 with Iceberg 1.10's session catalog resolves their
    # unqualified names in the reader's current database (checked: `SELECT * FROM v` fails
    # after `USE` of another database), so there is no one right answer to maintain: such a
    # view is refused (`view_query`).
    if spark_namespace and unqualified(text, model):
        namespace = spark_namespace.split(".")[-1].strip("`").lower()
    return ViewDefinition(relation, text, tuple(columns), namespace)


#: What a reader of the session's catalog says of a relation (`read_definitions`): a view's
#: (text, columns, namespace), `(None, [], "")` for a table, None where it cannot tell.
CatalogView = Callable[[str], "tuple[str | None, list[str], str] | None"]


def read_definitions(
    fetch: Fetch,
    model_sql: str,
    default_db: str,
    model: str,
    is_table: Callable[[str], bool] = lambda relation: False,
    catalog_view: CatalogView | None = None,
) -> dict[str, ViewDefinition]:
    """Every view the model reads, directly or through other views, by relation name. One
    `SHOW VIEWS` per database read, none where `is_table` says each relation read there is
    a table (so a model over Iceberg tables pays no statement), and one `DESCRIBE TABLE
    EXTENDED` per view; neither where `catalog_view` reads the relation from the session's
    catalog (one metastore call, no statement).

    >>> def fetch(statement):
    ...     raise AssertionError(statement)
    >>> read_definitions(fetch, "select * from db.t join db.u using (k)", "db", "m",
    ...                  is_table=lambda relation: relation in ("db.t", "db.u"))
    {}
    """
    views: dict[str, ViewDefinition] = {}
    listed: dict[str, set[str]] = {}
    for _ in range(MAX_DEPTH + 1):
        expanded = expand(model_sql, views, default_db, model)
        # The views found in this pass: read from the session's catalog, or None (to read).
        new: dict[str, ViewDefinition | None] = {}
        for relation in base_relations(expanded, default_db, model):
            if relation.count(".") == 2:
                # A relation of another catalog: its view's two-part names resolve there,
                # not here, so it is not expanded; a view is read through a snapshot-diff
                # copy (`capture/snapshot_diff.py`) like any relation without snapshots.
                continue
            if relation not in views and is_table(relation):
                continue
            found = catalog_view(relation) if catalog_view and relation not in views else None
            if found is not None:
                text, columns, spark_namespace = found
                if text is not None or columns:
                    new[relation] = definition(relation, text, columns, spark_namespace, model)
                continue
            database, name = relation.split(".", 1)
            if database not in listed:
                listed[database] = _view_names(fetch, database)
            if name in listed[database] and relation not in views:
                new[relation] = None
        if not new:
            return views
        for relation, known in new.items():
            views[relation] = known or read_definition(fetch, relation, model)
    raise UnsupportedQueryError(model, f"views nested more than {MAX_DEPTH} deep", model_sql[:120])


def digests(views: Mapping[str, ViewDefinition]) -> dict[str, str]:
    return {relation: view.digest for relation, view in sorted(views.items())}


def changed(recorded: str | None, now: Mapping[str, str]) -> str | None:
    """Why the model's SQL changed, when it is because of a view (None: not a view)."""
    try:
        before = json.loads(recorded) if recorded else {}
    except ValueError:
        before = {}
    if not isinstance(before, dict):
        before = {}
    for relation in sorted(set(before) | set(now)):
        if relation not in now:
            return f"{relation} is no longer a view it reads through its query"
        if relation not in before:
            return f"it now reads view {relation} through its query"
        if before[relation] != now[relation]:
            return f"the definition of view {relation} changed"
    return None
