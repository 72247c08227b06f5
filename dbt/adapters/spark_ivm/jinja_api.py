"""The @available methods the ivm macros call: the compiler exposed to Jinja.

They run SQL only through the model's dbt connection (session or thrift alike) and return
plain dicts, so the macros stay thin: they decide nothing, they orchestrate.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from dbt.adapters.base import available
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.events.types import AdapterEventWarning
from dbt.adapters.spark.connections import SparkConnectionMethod
from dbt_common.events.contextvars import get_node_info
from dbt_common.events.functions import warn_or_error
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.spark_ivm import response, session_metadata, staged_reads
from dbt.adapters.spark_ivm.compiler.errors import IvmError
from dbt.adapters.spark_ivm.compiler.runtime import cleanup, explain, fallback, upstream
from dbt.adapters.spark_ivm.compiler.runtime.chain import ChainMaintainer, aux_mode
from dbt.adapters.spark_ivm.compiler.runtime.config_change import OnChange
from dbt.adapters.spark_ivm.compiler.runtime.cost import refresh_policy
from dbt.adapters.spark_ivm.compiler.runtime.executor import describe_columns, table_properties
from dbt.adapters.spark_ivm.compiler.runtime.outcome import Mode, Outcome
from dbt.adapters.spark_ivm.compiler.runtime.session import Target
from dbt.adapters.spark_ivm.compiler.runtime.view import (
    MODEL_SQL,
    DescribedView,
    ViewDocs,
    docs_sql,
)
from dbt.adapters.spark_ivm.compiler.sql.equality import consistency_sql
from dbt.adapters.spark_ivm.compiler.sql.templates import sql, table
from dbt.adapters.spark_ivm.embedded import is_local_master

logger = AdapterLogger("spark_ivm")


def warn(message: str) -> None:
    """A warning the user should act on, as dbt's warning event: `--warn-error` (and
    `--warn-error-options`) turn it into an error, as for dbt's own warnings."""
    warn_or_error(
        AdapterEventWarning(name=logger.name, base_msg=message, args=[], node_info=get_node_info())
    )


def quote(identifier: str) -> str:
    """A Spark SQL identifier in backquotes."""
    return "`" + identifier.replace("`", "``") + "`"


TIMINGS_ENV = "DBT_SPARK_IVM_TIMINGS"

#: How Apache Spark's parser refuses what dbt's grants run (`GRANT`, `REVOKE`, `SHOW GRANT` are
#: "not allowed"; `SHOW GRANTS ON`, dbt's statement for the grants in place, is no syntax).
NO_GRANTS = ("Operation not allowed", "PARSE_SYNTAX_ERROR")


class _ConnectionExecutor:
    """Runs statements on the adapter's thread connection, returning raw row tuples (no agate
    type inference: snapshot ids and hashes must stay exactly as Spark returns them)."""

    def __init__(self, adapter: Any) -> None:
        self.adapter = adapter
        self._checkpointed: dict[str, Any] = {}  # scratch view -> its rows' JVM RDD
        self._staged: dict[str, staged_reads.StagedRead] = {}  # scratch view -> its task set

    def execute(self, statement: str) -> None:
        self.adapter.connections.add_query(statement, auto_begin=False)

    def fetch(self, statement: str) -> list[tuple]:
        _, cursor = self.adapter.connections.add_query(statement, auto_begin=False)
        return [tuple(row) for row in cursor.fetchall()]

    def changelog_view(self, relation: str, options: dict[str, str], view_name: str) -> bool:
        """Session method only: the raw Iceberg changelog scan of `relation` with `options`
        as a temp view of the session dbt's statements run in (SQL in Spark 3.5 cannot pass
        read options to a table; see `compiler/capture/changelog.py`)."""
        spark = self._local_session()
        if spark is None:
            return False
        name = ".".join(quote(part) for part in ["spark_catalog", *relation.split("."), "changes"])
        spark.read.options(**options).table(name).createOrReplaceTempView(view_name)
        return True

    def _local_session(self) -> Any:
        """The session dbt's statements run in, when this connection is the session method
        (else None): dbt-spark's session connection calls the same getOrCreate."""
        credentials = self.adapter.config.credentials
        if getattr(credentials, "method", None) != SparkConnectionMethod.SESSION:
            return None
        from pyspark.sql import SparkSession  # session method: pyspark is installed

        return SparkSession.builder.getOrCreate()

    def file_scan_view(
        self, relation: str, snapshot: int, keep: Callable[[str], bool], view_name: str
    ) -> tuple[int, int] | None:
        """Session method only: `relation` at `snapshot`, read through the data files whose
        path `keep` accepts, as the temp view `view_name` (`staged_reads.py`); (files read,
        files planned), or None."""
        spark = self._local_session()
        if spark is None:
            return None
        self.release_scratch_view(view_name)
        staged = staged_reads.stage(spark, relation, snapshot, keep, view_name)
        if staged is None:
            return None
        self._staged[view_name] = staged
        return staged.kept, staged.planned

    def iceberg_heads(self, relations: Sequence[str]) -> list[tuple[str, int | None, int]] | None:
        spark = self._local_session()
        return None if spark is None else session_metadata.heads(spark, relations)

    def iceberg_properties(self, relation: str) -> dict[str, str] | None:
        spark = self._local_session()
        return None if spark is None else session_metadata.properties(spark, relation)

    def iceberg_metadata_json(self, location: str) -> str | None:
        spark = self._local_session()
        return None if spark is None else session_metadata.metadata_json(spark, location)

    def iceberg_snapshot_totals(self, relation: str) -> tuple[int, dict[str, str]] | None:
        spark = self._local_session()
        return None if spark is None else session_metadata.snapshot_totals(spark, relation)

    def iceberg_columns(self, relation: str) -> list[tuple[str, str]] | None:
        spark = self._local_session()
        return None if spark is None else session_metadata.columns(spark, relation)

    def iceberg_rows_where(
        self, relation: str, column: str, value: int, selected: Sequence[str]
    ) -> list[tuple] | None:
        spark = self._local_session()
        if spark is None:
            return None
        return session_metadata.rows_where(spark, relation, column, value, selected)

    def iceberg_window_files(
        self, relation: str, snapshot_ids: Sequence[int], path_field: int
    ) -> list[tuple] | None:
        spark = self._local_session()
        if spark is None:
            return None
        return session_metadata.window_files(spark, relation, snapshot_ids, path_field)

    def scratch_view(self, select: str, view_name: str) -> bool:
        """Session method only: compute `select` into the session's block store and name it
        `view_name`. A `CACHE TABLE` view keeps its query's text: every statement that reads
        it parses and analyses the whole query again before it finds the cached rows, which
        for a delta over several states is a 40 KB query and seconds per read. A local
        checkpoint's plan is its rows."""
        spark = self._local_session()
        # On a cluster a lost executor loses checkpointed rows for good (a cached view
        # recomputes them): there the CACHE TABLE path is kept.
        if spark is None or not is_local_master(spark.sparkContext.master):
            return False
        self.release_scratch_view(view_name)
        # dbt's log shows every statement it runs; this one runs beside it
        logger.debug(f"spark_ivm: scratch view {view_name} as local checkpoint of: {select}")
        rows = spark.sql(select).localCheckpoint(eager=True)
        rows.createOrReplaceTempView(view_name)
        self._checkpointed[view_name] = rows._jdf.queryExecution().logical()
        return True

    def drop_scratch_view(self, view_name: str) -> bool:
        """Session method: drop the temp view through the session's catalog, which also
        uncaches a `CACHE TABLE` view's rows (a `DROP VIEW` statement cost 0.012-0.017 s,
        five to seven per refresh)."""
        spark = self._local_session()
        if spark is None or "." in view_name:  # scratch views are bare session names
            return False
        spark.catalog.dropTempView(view_name)
        self.release_scratch_view(view_name)
        return True

    def release_scratch_view(self, view_name: str) -> None:
        staged = self._staged.pop(view_name, None)
        if staged is not None:
            staged_reads.release(self._local_session(), staged)
        plan = self._checkpointed.pop(view_name, None)
        if plan is not None:
            try:
                plan.rdd().unpersist(False)
            except Exception:  # noqa: BLE001, S110 - Spark's cleaner frees it later anyway
                pass


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
    ) -> dict[str, Any]:
        """Build or incrementally refresh one ivm model; returns what the macro commits.
        `aux_states` is the model's `ivm_aux_states` config (`compiler/runtime/chain.py`),
        `unsupported` its `ivm_unsupported` config (`compiler/runtime/fallback.py`); `graph_nodes`
        (dbt's `graph.nodes`) tells whether ivm models read it (`compiler/runtime/upstream.py`);
        `refresh` is its `ivm_refresh` config (`compiler/runtime/cost.py`); `docs` what its
        `persist_docs` puts on its view (`comment`, `columns`; `compiler/runtime/view.py`);
        `on_configuration_change` dbt's config of that name, what a change of its SQL or
        `ivm_aux_states` that would rebuild it does (`compiler/runtime/config_change.py`)."""
        executor = _ConnectionExecutor(self)
        target = Target(schema, identifier)
        view_docs = ViewDocs.of(docs)
        try:
            on_refusal = fallback.unsupported_mode(unsupported, model_name)
            on_change = OnChange.of(on_configuration_change, model_name)
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
            )
            try:
                outcome = maintainer.run()
            except IvmError as e:
                construct = fallback.refusal(e)
                if on_refusal != "rebuild" or construct is None:
                    raise
                outcome = fallback.rebuild(
                    executor, model_name, compiled_sql, target, existing_type, construct
                )
            if view_docs is not None:
                self._keep_docs(executor, model_name, target, outcome, view_docs)
        except IvmError as e:
            raise DbtRuntimeError(str(e)) from e
        logger.info(f"ivm model '{model_name}': {outcome.summary}")
        if os.environ.get(TIMINGS_ENV):
            for label, seconds in outcome.timings:
                logger.info(f"ivm model '{model_name}': {seconds:7.3f}s {label}")
        return {
            "mode": outcome.mode.value,
            "reason": outcome.reason,
            "main_sql": outcome.main_sql,
            "summary": outcome.summary,
            "creates_view": outcome.creates_view,
            # dbt's adapter_response for run_results.json (`response.py`)
            "response": response.response(outcome),
        }

    @staticmethod
    def _keep_docs(
        executor: _ConnectionExecutor, model: str, target: Target, outcome: Outcome, docs: ViewDocs
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
            _ConnectionExecutor(self).fetch(f"SHOW GRANTS ON {sql(table(relation))}")
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
        maintainer = ChainMaintainer(
            executor=_ConnectionExecutor(self),
            model=model_name,
            compiled_sql="",
            target=Target(schema, identifier),
            existing="view",
            mode=aux_mode(aux_states, model_name),
            policy=refresh_policy(refresh, model_name),
            log=logger.info,
        )
        try:
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
        return cleanup.clean(_ConnectionExecutor(self), models, dry_run)

    @available.parse_none
    def ivm_consistency_sql(self, schema: str, identifier: str) -> str:
        """SQL returning the rows where the relation and a fresh run of its SQL differ."""
        relation = f"{schema}.{identifier}".lower()
        executor = _ConnectionExecutor(self)
        props = table_properties(executor.fetch, relation)
        if MODEL_SQL not in props:
            raise DbtRuntimeError(
                f"ivm_consistent: {relation} is not an ivm relation (no ivm.sql property); "
                "run the model with materialized='ivm' first."
            )
        columns = describe_columns(executor.fetch(f"DESCRIBE TABLE {sql(table(relation))}"))
        return consistency_sql(relation, props[MODEL_SQL], columns)
