"""empty: an ivm model under `dbt run --empty` (or `dbt build --empty`).

dbt's `--empty` runs every model over inputs that read no rows, to check that the project's
SQL runs against its inputs' shapes (in CI, say) without paying for the data. For an ivm
model that means:

* the model is checked as its next real run would plan it (`explain.py`, read-only, over the
  query `--empty` hides: `frontend/empty_reads.py`), so a construct the materialization
  refuses fails the `--empty` run too, with the same message;
* an existing relation and its state are left exactly as they are: emptying a maintained
  state would throw away what its next refresh needs. The run is `skipped`;
* a model not built yet gets its shape: a table of the model's columns and no rows, created
  from the SQL dbt rendered (`empty`). A table, not a view, so that an ivm model over it,
  checked in the same run, reads it as a table and not as a query with `LIMIT 0` inside. Its
  next run without `--empty` finds no ivm state there and builds the model.

    >>> outcome = empty_outcome(Target("db", "m"), None, "select 1 as k")
    >>> outcome.mode.value, outcome.main_sql
    ('empty', 'CREATE TABLE `db`.`m` USING iceberg AS select 1 as k')
    >>> empty_outcome(Target("db", "m"), "view", "select 1 as k").main_sql is None
    True
"""

from __future__ import annotations

from dbt.adapters.spark_ivm.compiler.frontend.empty_reads import restored
from dbt.adapters.spark_ivm.compiler.relations import Target
from dbt.adapters.spark_ivm.compiler.runtime import explain
from dbt.adapters.spark_ivm.compiler.runtime.chain import ChainMaintainer
from dbt.adapters.spark_ivm.compiler.runtime.outcome import Mode, Outcome, StateRows
from dbt.adapters.spark_ivm.compiler.sql.templates import sql, table

#: The reason an `--empty` run gives.
EMPTY = "--empty"


def check(chain: ChainMaintainer, compiled_sql: str) -> None:
    """Plan the model read-only as its next run would: raises the refusal that run would."""
    explain.explain(chain, restored(compiled_sql), strict=True)


def empty_outcome(target: Target, existing: str | None, compiled_sql: str) -> Outcome:
    """What an `--empty` run of a checked model does (see the module)."""
    relation = sql(table(target.view))
    if existing is not None:
        return Outcome(
            mode=Mode.SKIP,
            reason=EMPTY,
            main_sql=None,
            summary=f"{EMPTY}: left as it is (its {existing} and state are not emptied)",
            rows=StateRows(),
        )
    return Outcome(
        mode=Mode.EMPTY,
        reason=EMPTY,
        main_sql=f"CREATE TABLE {relation} USING iceberg AS {compiled_sql.strip()}",
        summary=f"{EMPTY}: its shape built as a table without rows (no state: the next run "
        "without --empty builds it)",
        rows=StateRows(),
    )
