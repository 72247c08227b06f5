"""The @available methods the ivm macros call: the compiler exposed to Jinja.

They run SQL only through the model's dbt connection (session or thrift alike) and return
plain dicts, so the macros stay thin: they decide nothing, they orchestrate.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from dbt.adapters.base import available
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.events.types import AdapterEventWarning
from dbt_common.events.contextvars import get_node_info
from dbt_common.events.functions import warn_or_error
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.spark_ivm import contract, response
from dbt.adapters.spark_ivm.compiler.errors import IvmError
from dbt.adapters.spark_ivm.compiler.relations import Target
from dbt.adapters.spark_ivm.compiler.runtime import cleanup, empty, explain, fallback, upstream
from dbt.adapters.spark_ivm.compiler.runtime.chain import ChainMaintainer
from dbt.adapters.spark_ivm.compiler.runtime.chain_states import aux_mode
from dbt.adapters.spark_ivm.compiler.runtime.config_change import OnChange
from dbt.adapters.spark_ivm.compiler.runtime.cost import refresh_policy
from dbt.adapters.spark_ivm.compiler.runtime.executor import describe_columns, table_properties
from dbt.adapters.spark_ivm.compiler.runtime.outcome import Mode, Outcome
from dbt.adapters.spark_ivm.compiler.runtime.view import (
    MODEL_SQL,
    DescribedView,
    ViewDocs,
    docs_sql,
)
from dbt.adapters.spark_ivm.compiler.sql.equality import consistency_sql
from dbt.adapters.spark_ivm.compiler.sql.layout import Layout
from dbt.adapters.spark_ivm.compiler.sql.templates import sql, table
from dbt.adapters.spark_ivm.connection_executor import ConnectionExecutor

logger = AdapterLogger("spark_ivm")


def warn(message: str) -> None:
    """A warning the user should act on, as dbt's warning event: `--warn-error` (and
    `--warn-error-options`) turn it into an error, as for dbt's own warnings."""
    warn_or_error(
        AdapterEventWarning(name=logger.name, base_msg=message, args=[], node_info=get_node_info())
    )


TIMINGS_ENV = "DBT_SPARK_IVM_TIMINGS"

#: How Apache Spark's parser refuses what dbt's grants run (`GRANT`, `REVOKE`, `SHOW GRANT` are
#: "not allowed"; `SHOW GRANTS ON`, dbt's statement for the grants in place, is no syntax).
NO_GRANTS = ("Operation not allowed", "PARSE_SYNTAX_ERROR")


def _committed(outcome: Outcome) -> dict[str, Any]:
    """What the materialization reads of a run's outcome: the statement it commits, whether
    that creates the view, and dbt's adapter_response for run_results.json (`response.py`)."""
    return {
        "mode": outcome.mode.value,
        "reason": outcome.reason,
        "main_sql": outcome.main_sql,
        "summary": outcome.summary,
        "creates_view": outcome.creates_view,
        "response": response.response(outcome),
    }


class IvmJinjaApi:
    """Mixin for SparkIvmAdapter exposing the ivm compiler to Jinja."""

    @available.parse_none
    def ivm_maintain(
        self,
        model_name: str,
        compiled_sql: str,
        schema: str,
        identifier: str,
        existing_type: str | None,
        full_refresh: bool,
        aux_states: str | None = None,
        unsupported: str | None = None,
        graph_nodes: dict[str, Any] | None = None,
        unique_id: str | None = None,
        refresh: str | None = None,
        docs: dict[str, Any] | None = None,
        on_configuration_change: str | None = None,
        layout: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Build or incrementally refresh one ivm model; returns what the macro commits.
        `aux_states` is the model's `ivm_aux_states` config (`compiler/runtime/aux_choice.py`),
        `unsupported` its `ivm_unsupported` config (`compiler/runtime/fallback.py`); `graph_nodes`
        (dbt's `graph.nodes`) tells whether ivm models read it (`compiler/runtime/upstream.py`);
        `refresh` is its `ivm_refresh` config (`compiler/runtime/cost.py`); `docs` what its
        `persist_docs` puts on its view (`comment`, `columns`; `compiler/runtime/view.py`);
        `on_configuration_change` dbt's config of that name, what a change of its SQL or
        `ivm_aux_states` that would rebuild it does (`compiler/runtime/config_change.py`);
        `layout` its `tblproperties`, `partition_by`, `location_root` and
        `include_full_name_in_path`, for the tables it creates (`compiler/sql/layout.py`)."""
        executor = ConnectionExecutor(self)
        target = Target(schema, identifier)
        view_docs = ViewDocs.of(docs)
        try:
            on_refusal = fallback.unsupported_mode(unsupported, model_name)
            on_change = OnChange.of(on_configuration_change, model_name)
            tables = Layout.of(layout, model_name)
            maintainer = ChainMaintainer(
                executor=executor,
                model=model_name,
                compiled_sql=compiled_sql,
                target=target,
                existing=existing_type,
                full_refresh=bool(full_refresh),
                mode=aux_mode(aux_states, model_name),
                policy=refresh_policy(refresh, model_name),
                log=logger.info,
                warn=warn,
                publish=upstream.has_ivm_readers(graph_nodes, unique_id),
                docs=view_docs,
                on_change=on_change,
                layout=tables,
            )
            try:
                outcome = maintainer.run()
            except IvmError as e:
                construct = fallback.refusal(e)
                if on_refusal != "rebuild" or construct is None:
                    raise
                outcome = fallback.rebuild(
                    executor, model_name, compiled_sql, target, existing_type, construct,
                    layout=tables,
                )  # fmt: skip
            if view_docs is not None:
                self._keep_docs(executor, model_name, target, outcome, view_docs)
        except IvmError as e:
            raise DbtRuntimeError(str(e)) from e
        logger.info(f"ivm model '{model_name}': {outcome.summary}")
        if os.environ.get(TIMINGS_ENV):
            for label, seconds in outcome.timings:
                logger.info(f"ivm model '{model_name}': {seconds:7.3f}s {label}")
        return _committed(outcome)

    @staticmethod
    def _keep_docs(
        executor: ConnectionExecutor, model: str, target: Target, outcome: Outcome, docs: ViewDocs
    ) -> None:
        """`persist_docs` on a run that keeps the model's view (a refresh, no change, a rebuild
        in place): the view's comments brought to the model's docs where they differ (one
        DESCRIBE a run; `view.docs_sql`). A built view has them from its CREATE; a model
        rebuilt in full (`ivm_unsupported='rebuild'`) is a table, which gets none: said; a
        skipped run (`on_configuration_change: continue`) leaves the view as it is."""
        if outcome.mode is Mode.SKIP:
            return
        if outcome.mode is Mode.REBUILD:
            warn(
                f"ivm model '{model}': persist_docs is not applied to a model rebuilt in full "
                "(ivm_unsupported='rebuild'): its relation is a table without comments"
            )
            return
        if outcome.creates_view:
            return
        view = target.view
        described = DescribedView.of(executor.fetch(f"DESCRIBE TABLE EXTENDED {sql(table(view))}"))
        statements = docs_sql(
            model, view, described, lambda: table_properties(executor.fetch, view), docs
        )
        for statement in statements:
            executor.execute(statement)
        if statements:
            how = "re-created (its state kept)" if len(statements) > 1 else "altered"
            logger.info(f"ivm model '{model}': persist_docs: view {view} {how} for new comments")

    def _reading_chain(
        self,
        model_name: str,
        target: Target,
        aux_states: str | None,
        refresh: str | None,
        log: Callable[[str], None],
    ) -> ChainMaintainer:
        """A chain that plans the model read-only, as its next run would (`explain.py`)."""
        return ChainMaintainer(
            executor=ConnectionExecutor(self),
            model=model_name,
            compiled_sql="",
            target=target,
            existing="view",
            mode=aux_mode(aux_states, model_name),
            policy=refresh_policy(refresh, model_name),
            log=log,
        )

    @available.parse_none
    def ivm_empty(
        self,
        model_name: str,
        compiled_sql: str,
        schema: str,
        identifier: str,
        existing_type: str | None,
        aux_states: str | None = None,
        unsupported: str | None = None,
    ) -> dict[str, Any]:
        """The model under `dbt run --empty` (`compiler/runtime/empty.py`): checked as its next
        run would plan it (a refused construct is no error under `ivm_unsupported='rebuild'`);
        an existing relation and state left as they are, a new model's shape built as a table
        without rows. Returns what the macro commits, as `ivm_maintain` does."""
        target = Target(schema, identifier)
        try:
            chain = self._reading_chain(model_name, target, aux_states, None, logger.debug)
            on_refusal = fallback.unsupported_mode(unsupported, model_name)
            try:
                empty.check(chain, compiled_sql)
            except IvmError as e:
                if on_refusal != "rebuild" or fallback.refusal(e) is None:
                    raise
        except IvmError as e:
            raise DbtRuntimeError(str(e)) from e
        outcome = empty.empty_outcome(target, existing_type, compiled_sql)
        logger.info(f"ivm model '{model_name}': {outcome.summary}")
        return _committed(outcome)

    @available.parse_none
    def ivm_check_contract(
        self,
        model_name: str,
        columns: dict[str, Any] | None,
        constraints: list[dict[str, Any]] | None,
    ) -> None:
        """Warn of each constraint of an enforced contract that an ivm model cannot enforce
        (all of them: its relation is a view; `contract.py`). dbt's own macro has checked the
        columns' names and types before."""
        for message in contract.unenforced(model_name, columns, constraints):
            warn(message)

    @available.parse_none
    def ivm_check_grants(
        self, model_name: str, schema: str, identifier: str, grants: dict[str, Any] | None
    ) -> None:
        """Fail the model, before anything is built, when it has `grants` and this Spark has
        no GRANT statement (Apache Spark 3.5: the embedded session, a Spark Thrift server).

        dbt-spark runs Databricks' `SHOW GRANTS ON` and `GRANT`, which Apache Spark's parser
        refuses with an error that names neither the model nor the config. The probe is that
        `SHOW GRANTS ON` the model's relation: an engine that has grants answers it (or says
        the relation is not there yet: then dbt's `apply_grants` runs after the build)."""
        if not grants:
            return
        relation = f"{schema}.{identifier}"
        try:
            ConnectionExecutor(self).fetch(f"SHOW GRANTS ON {sql(table(relation))}")
        except Exception as e:  # only a refusal of the statement itself counts
            answer = str(e)
            if not any(mark in answer for mark in NO_GRANTS):
                return
            first = next((line.strip() for line in answer.splitlines() if line.strip()), "")
            raise DbtRuntimeError(
                f"ivm model '{model_name}': its grants {dict(grants)} cannot be applied: this "
                f"Spark has no GRANT statement (SHOW GRANTS ON {relation}: {first[:200]}). "
                "Apache Spark keeps no privileges on tables or views; remove `grants` from the "
                "model's config for this target (e.g. set it only where target.name is the one "
                "whose Spark enforces grants). Nothing was built or changed."
            ) from e

    @available.parse_none
    def ivm_explain(
        self,
        model_name: str,
        schema: str,
        identifier: str,
        aux_states: str | None = None,
        select: str | None = None,
        refresh: str | None = None,
    ) -> list[str]:
        """The model's dataflow in words (`compiler/runtime/explain.py`); read-only. `select`: a
        SELECT to explain instead of the one the model's relation records."""
        try:
            maintainer = self._reading_chain(
                model_name, Target(schema, identifier), aux_states, refresh, logger.info
            )
            return explain.explain(maintainer, select or None)
        except IvmError as e:
            raise DbtRuntimeError(str(e)) from e

    @available.parse_none
    def ivm_cleanup(
        self, models: dict[str, dict[str, list[str]]], dry_run: bool = False
    ) -> list[str]:
        """Drop the companion relations of models that are no longer ivm models
        (`compiler/runtime/cleanup.py`); `models`: per schema, the identifiers of the
        project's models materialized as `ivm` and as anything else. The lines it says."""
        return cleanup.clean(ConnectionExecutor(self), models, dry_run)

    @available.parse_none
    def ivm_consistency_sql(self, schema: str, identifier: str) -> str:
        """SQL returning the rows where the relation and a fresh run of its SQL differ."""
        relation = f"{schema}.{identifier}".lower()
        executor = ConnectionExecutor(self)
        props = table_properties(executor.fetch, relation)
        if MODEL_SQL not in props:
            raise DbtRuntimeError(
                f"ivm_consistent: {relation} is not an ivm relation (no ivm.sql property); "
                "run the model with materialized='ivm' first."
            )
        columns = describe_columns(executor.fetch(f"DESCRIBE TABLE {sql(table(relation))}"))
        return consistency_sql(relation, props[MODEL_SQL], columns)
