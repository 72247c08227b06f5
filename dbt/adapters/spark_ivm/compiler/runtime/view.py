"""view: the model's relation, a view over the data rows of its state table.

The view is created by a full build only, and only where the one there differs from it
(`VIEW_DIGEST`): a refresh, a rebuild in place and a rebuild whose view would be the same keep
it, since with Iceberg's Hive-backed SparkSessionCatalog `CREATE OR REPLACE VIEW` keeps the old
view text and `ALTER VIEW .. AS` fails, so a changed view is dropped and created.
Its properties say what it is built from: the state format, the SQL's hash, the state table
(`STATE_TABLE`, what marks a view as an ivm model's) and the model's own SQL (`ivm.sql`,
which `ivm_consistent` compares the relation with).

dbt's `persist_docs` puts the model's description on the view as its comment and the column
descriptions as its columns' comments (`ViewDocs`). Since a refresh keeps the view, a run that
keeps it compares the view's comments with the model's docs (`docs_sql`): a changed model
comment is set in place; changed column comments (Spark alters no column of a view) drop and
create the view again with its text and `ivm.*` properties as they were, the state untouched.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler import render
from dbt.adapters.spark_ivm.compiler.errors import IvmError
from dbt.adapters.spark_ivm.compiler.operators.top_k import TopK
from dbt.adapters.spark_ivm.compiler.plan import Plan
from dbt.adapters.spark_ivm.compiler.relations import Target
from dbt.adapters.spark_ivm.compiler.runtime.facts import FORMAT_VERSION
from dbt.adapters.spark_ivm.compiler.sql.layout import properties_sql
from dbt.adapters.spark_ivm.compiler.sql.templates import sql, table

#: The view property naming a model's state table: what marks a view as an ivm model's.
STATE_TABLE = "ivm.state_table"
#: The view property holding the model's own SQL (what `ivm_consistent` compares with).
MODEL_SQL = "ivm.sql"
#: The view property holding a digest of the statement that created the view (without this
#: property): a rebuild whose view would be the same keeps the one there.
VIEW_DIGEST = "ivm.view_digest"


#: Where a view's properties say what it is: the plugin's own, kept when the view is re-created.
IVM_PROPERTY_PREFIX = "ivm."


@dataclass(frozen=True)
class ViewDocs:
    r"""What dbt's `persist_docs` puts on the model's view: its comment and its columns'.

    >>> docs = ViewDocs.of({"comment": "Revenue", "columns": {"N": {"description": "n's"}}})
    >>> docs.column_comment("n"), ViewDocs.of({"comment": "", "columns": {}}) is None
    ("n's", True)
    >>> print(docs.clauses(["nation", "n"]))
    (`nation`, `n` COMMENT 'n\'s') COMMENT 'Revenue'
    """

    comment: str | None = None
    columns: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, config: Mapping[str, Any] | None) -> ViewDocs | None:
        """From what the materialization passes: `comment`, the model's description (when
        `persist_docs.relation`), and `columns`, dbt's `model.columns` or name -> description
        (when `persist_docs.columns`). An empty description is no comment (as dbt-spark's
        column comments); None when nothing is left to put on the view."""
        if not config:
            return None
        columns: dict[str, str] = {}
        for name, column in (config.get("columns") or {}).items():
            text = column.get("description") if isinstance(column, Mapping) else column
            if text:
                columns[str(name).lower()] = str(text)
        docs = cls(comment=str(config.get("comment") or "") or None, columns=columns)
        return docs if docs.comment is not None or docs.columns else None

    def column_comment(self, name: str) -> str | None:
        """The comment of the view's column `name` (Spark's names are case-insensitive)."""
        return self.columns.get(name.lower())

    def clauses(self, names: Sequence[str]) -> str:
        """`CREATE VIEW`'s column list (every one of the view's `names`, in order, the
        documented ones with their comment) and its `COMMENT`, each where there is one."""
        parts = []
        if self.columns:
            listed = []
            for name in names:
                column = sql(exp.to_identifier(name, quoted=True))
                text = self.column_comment(name)
                listed.append(column if text is None else f"{column} COMMENT {_string(text)}")
            parts.append(f"({', '.join(listed)})")
        if self.comment is not None:
            parts.append(f"COMMENT {_string(self.comment)}")
        return " ".join(parts)


def _string(text: str) -> str:
    """A Spark string literal (quotes and backslashes escaped by sqlglot)."""
    return sql(exp.Literal.string(text))


@dataclass(frozen=True)
class DescribedView:
    """The view as `DESCRIBE TABLE EXTENDED` shows it: its columns with their comments, its
    comment and its text (what re-creating it needs)."""

    columns: list[tuple[str, str | None]]
    comment: str | None
    text: str | None

    @classmethod
    def of(cls, rows: Sequence[Sequence[Any]]) -> DescribedView:
        """From the statement's (col_name, data_type, comment) rows: the columns up to the
        first empty or `#` row, then the detailed information as name/value pairs.

        >>> DescribedView.of([("k", "string", None), ("n", "bigint", "rows"), ("", "", ""),
        ...     ("# Detailed Table Information", "", ""), ("Comment", "Revenue", ""),
        ...     ("View Text", "SELECT 1", "")])
        DescribedView(columns=[('k', None), ('n', 'rows')], comment='Revenue', text='SELECT 1')
        """
        columns: list[tuple[str, str | None]] = []
        info: dict[str, str] = {}
        in_columns = True
        for row in rows:
            name = str(row[0] or "").strip()
            if not name or name.startswith("#"):
                in_columns = False
            elif in_columns:
                columns.append((name, str(row[2]) if row[2] else None))
            else:
                info.setdefault(name, str(row[1] if row[1] is not None else ""))
        return cls(columns, info.get("Comment") or None, info.get("View Text"))


def docs_sql(
    model: str,
    view: str,
    described: DescribedView,
    properties: Callable[[], Mapping[str, str]],
    docs: ViewDocs,
) -> list[str]:
    """What brings the comments of a kept view (`described`) to the model's `docs`: nothing
    when they agree; a changed model comment alone is set in place (`ALTER VIEW .. SET
    TBLPROPERTIES ('comment' = ..)`, atomic); changed column comments drop the view and
    create it again with its own text and `ivm.*` properties (`properties` reads the view's,
    as `SHOW TBLPROPERTIES` lists them), since Spark 3.5 alters no column of a view and
    `CREATE OR REPLACE VIEW` keeps the old text on Iceberg's Hive-backed SparkSessionCatalog.
    Readers miss the view between the two statements; the state table is not touched.

    >>> view = DescribedView([("k", None), ("n", None)], None, "SELECT k, n FROM db.m__ivm_state")
    >>> docs_sql("m", "db.m", view, dict, ViewDocs(comment="Revenue"))
    ["ALTER VIEW `db`.`m` SET TBLPROPERTIES ('comment' = 'Revenue')"]
    >>> props = {"ivm.sql": "select 1", "table_type": "ICEBERG-VIEW"}
    >>> for s in docs_sql("m", "db.m", view, lambda: props, ViewDocs(columns={"n": "rows"})):
    ...     print(s)
    DROP VIEW IF EXISTS `db`.`m`
    CREATE VIEW `db`.`m` (`k`, `n` COMMENT 'rows') TBLPROPERTIES ('ivm.sql' = 'select 1') AS SELECT k, n FROM db.m__ivm_state
    """
    target = sql(table(view))
    wanted = [(name, docs.column_comment(name)) for name, _ in described.columns]
    if wanted != described.columns:
        if not described.text:
            raise IvmError(
                f"ivm model '{model}': cannot re-create its view {view} with the new column "
                "comments: DESCRIBE TABLE EXTENDED shows no view text; run it with "
                "--full-refresh"
            )
        kept = {k: v for k, v in properties().items() if k.startswith(IVM_PROPERTY_PREFIX)}
        names = [name for name, _ in described.columns]
        create = _create_view(view, docs.clauses(names), kept, described.text)
        return [f"DROP VIEW IF EXISTS {target}", create]
    if docs.comment == described.comment:
        return []
    if docs.comment is None:
        return [f"ALTER VIEW {target} UNSET TBLPROPERTIES IF EXISTS ('comment')"]
    return [f"ALTER VIEW {target} SET TBLPROPERTIES ('comment' = {_string(docs.comment)})"]


def _create_view(view: str, clauses: str, properties: Mapping[str, str], select: str) -> str:
    """`CREATE VIEW` with its column list and comment (`clauses`, may be empty) and its
    properties."""
    head = " ".join(part for part in (f"CREATE VIEW {sql(table(view))}", clauses) if part)
    return f"{head} TBLPROPERTIES ({properties_sql(properties)}) AS {select}"


def view_select(plan: Plan, state: str, top: TopK | None = None) -> str:
    """The view's query: the state's data rows as the model's result (its ORDER BY .. LIMIT
    applied where the model has one, `top_k.py`)."""
    select = render.view_select(plan, state)
    return top.limited(select) if top is not None else select


@dataclass(frozen=True)
class ViewStatement:
    """The statement creating a model's view, and the properties it gives the view (among
    them `VIEW_DIGEST`, a digest of the statement without it)."""

    sql: str
    properties: Mapping[str, str]

    def is_there(self, found: Mapping[str, str] | None) -> bool:
        """Is the view whose properties are `found` (None: no view) the one this creates:
        the same statement, its properties as they were set (none edited since)?

        >>> made = ViewStatement("CREATE VIEW ..", {VIEW_DIGEST: "0a1b", "ivm.sql_hash": "7"})
        >>> made.is_there({VIEW_DIGEST: "0a1b", "ivm.sql_hash": "7", "other": "x"})
        True
        >>> made.is_there({VIEW_DIGEST: "0a1b", "ivm.sql_hash": "edited"}), made.is_there(None)
        (False, False)
        """
        return found is not None and all(found.get(k) == v for k, v in self.properties.items())


def create_view_sql(
    target: Target,
    plan: Plan,
    digest: str,
    model_sql: str,
    properties: Mapping[str, str],
    top: TopK | None = None,
    docs: ViewDocs | None = None,
) -> ViewStatement:
    """The model's view over its state, its properties saying what it is built from, with
    the comments of `docs` (dbt's `persist_docs`) on it and its columns."""
    props = {
        "ivm.format": FORMAT_VERSION,
        "ivm.sql_hash": digest,
        STATE_TABLE: target.state,
        MODEL_SQL: model_sql,
        **properties,
    }
    clauses = docs.clauses(plan.output_names) if docs is not None else ""
    select = view_select(plan, target.state, top)
    itself = hashlib.sha256(_create_view(target.view, clauses, props, select).encode()).hexdigest()
    props[VIEW_DIGEST] = itself[:32]
    return ViewStatement(_create_view(target.view, clauses, props, select), props)
