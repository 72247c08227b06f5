"""chain_states: the states a model's chain is made of, where its view records them, and
dropping them.

A model is its own state, or an auxiliary state then the model (`chain.py`, `ivm_aux_states`),
or sub-query states innermost first then the model (`frontend/stages.py`). The model's view
records which (`CHOICE`, `AUX_SQL`, `TOP_SQL`, `STAGES`), so a refresh need not plan the
model again to know its states, and a model that stops keeping one drops it.
"""

from __future__ import annotations

from dbt.adapters.spark_ivm.compiler.relations import Target
from dbt.adapters.spark_ivm.compiler.runtime.executor import Executor
from dbt.adapters.spark_ivm.compiler.runtime.outcome import Outcome
from dbt.adapters.spark_ivm.compiler.runtime.settings import model_setting
from dbt.adapters.spark_ivm.compiler.sql import state_table
from dbt.adapters.spark_ivm.compiler.sql.templates import sql, table

AUX_ENV = "DBT_SPARK_IVM_AUX_STATES"
MODES = ("auto", "always", "never")
#: Off unless asked for: on bench SF 1 (0.1 % changed, loaded machine) nation_revenue's
#: refresh took 44 s with its auxiliary state against 10.6 s flat (bench/results/dataflow-journal.md).
DEFAULT_MODE = "never"
#: View properties recording the choice: "<mode>:<hash of the model SQL>", and the queries.
CHOICE = "ivm.aux_choice"
AUX_SQL = "ivm.aux_sql"
TOP_SQL = "ivm.top_sql"
#: View property: how many sub-query states (`stages.py`) the model keeps.
STAGES = "ivm.stages"


def aux_mode(configured: str | None, model: str) -> str:
    """The model's `ivm_aux_states` setting (config, else environment, else never)."""
    return model_setting(model, "ivm_aux_states", configured, AUX_ENV, MODES, DEFAULT_MODE)


def make_view(executor: Executor, target: Target, outcome: Outcome, exists: bool) -> None:
    """Create the view of an auxiliary or sub-query state where its run built the state
    anew (`Outcome.creates_view`), dropping the one there (`exists`) first; a run that keeps
    the view does nothing."""
    if not outcome.creates_view or outcome.main_sql is None:
        return
    if exists:
        executor.execute(f"DROP VIEW IF EXISTS {sql(table(target.view))}")
    executor.execute(outcome.main_sql)


def drop_state(executor: Executor, target: Target) -> None:
    """Drop a state's view and state table."""
    executor.execute(f"DROP VIEW IF EXISTS {sql(table(target.view))}")
    executor.execute(state_table.drop_state_sql(target.state))


def drop_stages(executor: Executor, target: Target, props: dict[str, str], keep: int) -> None:
    """Drop the sub-query states numbered `keep` and up that the model's view properties
    `props` record."""
    for index in range(keep, int(props.get(STAGES, "0") or 0)):
        drop_state(executor, target.sub_query(index))
