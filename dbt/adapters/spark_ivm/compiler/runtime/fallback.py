"""fallback: a model the compiler cannot maintain, rebuilt in full every run on request.

`config(ivm_unsupported='rebuild')` (else the DBT_SPARK_IVM_UNSUPPORTED environment
variable) turns a refusal into a full rebuild: the model becomes an Iceberg table that
`CREATE OR REPLACE TABLE ... AS <its SELECT>` writes on every run, and the log names the
construct. The default, `error`, keeps the precise error. Only refusals fall back: an
unsupported construct or a base relation whose changes cannot be captured; a failure while
reading or writing stays an error (rebuilding would hide it).

The table carries the model's SQL (`ivm.sql`), so `ivm_consistent` tests it as any ivm
model, and `ivm.fallback`, naming the construct. When the SQL becomes maintainable again,
the next run finds a table without ivm state and builds the model (`refresh.py`).

    select k, e from db.t lateral view explode(array(x, y)) g as e
    -> ivm model 'm': rebuilt in full: LATERAL VIEW / generator is not maintained
       incrementally (ivm_unsupported='rebuild')
"""

from __future__ import annotations

from dbt.adapters.spark_ivm.compiler.errors import (
    IvmError,
    UncapturableBaseError,
    UnsupportedQueryError,
)
from dbt.adapters.spark_ivm.compiler.relations import Target
from dbt.adapters.spark_ivm.compiler.runtime.chain_states import drop_stages, drop_state
from dbt.adapters.spark_ivm.compiler.runtime.executor import Executor, table_properties
from dbt.adapters.spark_ivm.compiler.runtime.outcome import Mode, Outcome
from dbt.adapters.spark_ivm.compiler.runtime.settings import model_setting
from dbt.adapters.spark_ivm.compiler.runtime.view import MODEL_SQL
from dbt.adapters.spark_ivm.compiler.sql import state_table
from dbt.adapters.spark_ivm.compiler.sql.layout import NO_LAYOUT, Layout

UNSUPPORTED_ENV = "DBT_SPARK_IVM_UNSUPPORTED"
MODES = ("error", "rebuild")
#: View/table property naming why a model is rebuilt instead of maintained.
FALLBACK = "ivm.fallback"


def unsupported_mode(configured: str | None, model: str) -> str:
    """The model's `ivm_unsupported` setting (config, else environment, else error)."""
    return model_setting(model, "ivm_unsupported", configured, UNSUPPORTED_ENV, MODES, "error")


def refusal(error: IvmError) -> str | None:
    """What a refusal names (None: the error is not a refusal, so it never falls back)."""
    if isinstance(error, UnsupportedQueryError):
        return error.construct
    if isinstance(error, UncapturableBaseError):
        return f"base relation {error.relation}, which {error.problem},"
    return None


def rebuild(
    executor: Executor, model: str, compiled_sql: str, target: Target, existing: str | None,
    construct: str, user_sql: str | None = None, layout: Layout = NO_LAYOUT,
) -> Outcome:  # fmt: skip
    """The full rebuild of a refused model: its ivm relations are dropped (a maintained
    model that became unmaintainable) and `main_sql` writes the table in one statement,
    created as the model's `layout` says (partitioned by its result columns)."""
    if existing == "view":
        # A maintained model: its state and auxiliary state are of no further use. The
        # view itself is dropped by the materialization just before the table is written.
        executor.execute(state_table.drop_state_sql(target.state))
        drop_state(executor, target.auxiliary)
        try:
            props = table_properties(executor.fetch, target.view)
        except Exception:  # noqa: BLE001 - no readable view: no sub-query states recorded
            props = {}
        drop_stages(executor, target, props, keep=0)
    props = {MODEL_SQL: (user_sql or compiled_sql).strip(), FALLBACK: construct}
    create = layout.create_sql(
        target.view, props, layout.partition_columns, replace=existing != "view"
    )
    main_sql = f"{create} AS {compiled_sql}"
    reason = f"{construct} is not maintained incrementally (ivm_unsupported='rebuild')"
    return Outcome(
        mode=Mode.REBUILD, reason=reason, main_sql=main_sql, summary=f"rebuilt in full: {reason}"
    )
