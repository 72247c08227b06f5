"""view: the model's relation, a view over the data rows of its state table.

The view is created by a full build only (a refresh and a rebuild in place keep it: with
Iceberg's Hive-backed SparkSessionCatalog `CREATE OR REPLACE VIEW` keeps the old view text).
Its properties say what it is built from: the state format, the SQL's hash, the state table
(`STATE_TABLE`, what marks a view as an ivm model's) and the model's own SQL (`ivm.sql`,
which `ivm_consistent` compares the relation with).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler import render
from dbt.adapters.spark_ivm.compiler.operators.top_k import TopK
from dbt.adapters.spark_ivm.compiler.plan import Plan
from dbt.adapters.spark_ivm.compiler.runtime.facts import FORMAT_VERSION, Target
from dbt.adapters.spark_ivm.compiler.sql.templates import sql, table

#: The view property naming a model's state table: what marks a view as an ivm model's.
STATE_TABLE = "ivm.state_table"


@dataclass(frozen=True)
class ViewDocs:
    """What dbt's `persist_docs` puts on the model's view: its comment and its columns'."""

    comment: str | None = None
    columns: Mapping[str, str] = field(default_factory=dict)


def view_select(the_plan: Plan, state: str, top: TopK | None = None) -> str:
    """The view's query: the state's data rows as the model's result (its ORDER BY .. LIMIT
    applied where the model has one, `top_k.py`)."""
    select = render.view_select(the_plan, state)
    return top.limited(select) if top is not None else select


def create_view_sql(
    target: Target,
    the_plan: Plan,
    digest: str,
    model_sql: str,
    properties: Mapping[str, str],
    top: TopK | None = None,
    docs: ViewDocs | None = None,
) -> str:
    """The model's view over its state, its properties saying what it is built from."""
    props = {
        "ivm.format": FORMAT_VERSION,
        "ivm.sql_hash": digest,
        STATE_TABLE: target.state,
        "ivm.sql": model_sql,
        **properties,
    }
    prop_sql = ", ".join(
        f"{sql(exp.Literal.string(k))} = {sql(exp.Literal.string(v))}" for k, v in props.items()
    )
    return (
        f"CREATE VIEW {sql(table(target.view))} TBLPROPERTIES ({prop_sql}) AS "
        f"{view_select(the_plan, target.state, top)}"
    )
