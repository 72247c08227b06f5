"""connection_executor: what the runtime can do over a model's dbt connection.

`ConnectionExecutor` is the runtime's `Executor` (`compiler/runtime/executor.py`) on dbt's
thread connection: statements and their rows in both methods, and in session mode the
shortcuts through the driver's JVM (Iceberg metadata read from the catalog, changelog and
file scans as temp views, scratch relations as local checkpoints).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.connections import SparkConnectionMethod

from dbt.adapters.spark_ivm import metastore_lock, session_metadata, staged_reads
from dbt.adapters.spark_ivm.compiler.sql.templates import catalog_of
from dbt.adapters.spark_ivm.embedded import is_local_master

logger = AdapterLogger("spark_ivm")
#: Names Spark's observed metrics of measured scratch views apart (`measured_scratch_view`).
_OBSERVATIONS = itertools.count()


def quote(identifier: str) -> str:
    """A Spark SQL identifier in backquotes."""
    return "`" + identifier.replace("`", "``") + "`"


class ConnectionExecutor:
    """Runs statements on the adapter's thread connection, returning raw row tuples (no agate
    type inference: snapshot ids and hashes must stay exactly as Spark returns them)."""

    def __init__(self, adapter: Any) -> None:
        self.adapter = adapter
        self._checkpointed: dict[str, Any] = {}  # scratch view -> its rows' JVM RDD
        self._staged: dict[str, staged_reads.StagedRead] = {}  # scratch view -> its task set
        self._current_catalog: str | None = None
        # Catalog tables refreshed since this executor last ran a statement (`_refresh`).
        self._fresh: set[str] = set()
        self._statements = 0

    def statements_run(self) -> int:
        return self._statements

    def execute(self, statement: str) -> None:
        self._wrote()
        self.adapter.connections.add_query(statement, auto_begin=False)

    def _wrote(self) -> None:
        """A statement ran (it may have written): the next reads refresh, and what the
        runtime read of tables before it is read again (`statements_run`)."""
        self._fresh.clear()
        self._statements += 1

    def fetch(self, statement: str) -> list[tuple]:
        """The rows of a statement that reads (a query, DESCRIBE, SHOW): the runtime writes
        through `execute` only."""
        _, cursor = self.adapter.connections.add_query(statement, auto_begin=False)
        return [tuple(row) for row in cursor.fetchall()]

    def _refresh(self, relation: str) -> bool:
        """Must a read of `relation`'s catalog table (its properties, columns, snapshot
        summary, rows) refresh it from the metastore first? Only where this executor has not
        refreshed it since its last statement, the run's only writes: a commit by another
        writer in between is one the run could as well have missed a moment before. Its
        heads, which pin a run's snapshots and check that a base read live did not move,
        always refresh (`session_metadata.heads`)."""
        stale = relation not in self._fresh
        self._fresh.add(relation)
        return stale

    def changelog_view(self, relation: str, options: dict[str, str], view_name: str) -> bool:
        """Session method only: the raw Iceberg changelog scan of `relation` with `options`
        as a temp view of the session dbt's statements run in (SQL in Spark 3.5 cannot pass
        read options to a table; see `compiler/capture/changelog.py`)."""
        spark = self._local_session()
        if spark is None:
            return False
        # Iceberg's metadata table of `db.t` needs its catalog named: the relation's own
        # (`catalog.db.t`), else the current one, where two-part names resolve
        catalog, name = catalog_of(relation)
        parts = [catalog or self._catalog_of_statements(spark), *name.split("."), "changes"]
        name = ".".join(quote(part) for part in parts)
        spark.read.options(**options).table(name).createOrReplaceTempView(view_name)
        return True

    def sole_writer(self) -> bool:
        """Can no other process commit to this session's tables? True for the embedded
        session over the Derby metastore this process holds the lock on
        (`metastore_lock.py`), its session catalog current (a named catalog's warehouse
        could be another process's too): a refresh's commit then needs no guard against
        another run of its model (`state_table.meta_unchanged`)."""
        spark = self._local_session()
        if spark is None or not metastore_lock.held():
            return False
        return self._catalog_of_statements(spark) == "spark_catalog"

    def _catalog_of_statements(self, spark: Any) -> str:
        """The catalog two-part names of this session's statements resolve in. Not
        `spark.catalog.currentCatalog()`: that reads the calling thread's SQL conf, and in
        dbt's model threads, where no session is active, it answers `spark_catalog` whatever
        `spark.sql.defaultCatalog` says; a statement runs with its session active."""
        if self._current_catalog is None:
            # The session's catalog manager answers without a statement or a Spark job.
            manager = session_metadata.active_session(spark).sessionState().catalogManager()
            self._current_catalog = str(manager.currentCatalog().name())
        return self._current_catalog

    def _local_session(self) -> Any:
        """The session dbt's statements run in, when this connection is the session method
        (else None): dbt-spark's session connection calls the same getOrCreate."""
        credentials = self.adapter.config.credentials
        if getattr(credentials, "method", None) != SparkConnectionMethod.SESSION:
            return None
        from pyspark.sql import SparkSession  # session method: pyspark is installed

        return SparkSession.builder.getOrCreate()

    def file_scan_view(
        self,
        relation: str,
        snapshot: int,
        keep: Callable[[str], bool],
        view_name: str,
        positions: bool = False,
    ) -> tuple[int, int] | None:
        """Session method only: `relation` at `snapshot`, read through the data files whose
        path `keep` accepts, as the temp view `view_name` (`staged_reads.py`); (files read,
        files planned), or None."""
        spark = self._local_session()
        if spark is None:
            return None
        self.release_scratch_view(view_name)
        staged = staged_reads.stage(spark, relation, snapshot, keep, view_name, positions)
        if staged is None:
            return None
        self._staged[view_name] = staged
        return staged.kept, staged.planned

    def delete_positions_view(self, paths: Sequence[str], view_name: str) -> bool:
        """Session method only: the positions Parquet position delete files hold, as the temp
        view `view_name` (`staged_reads.positions_view`)."""
        spark = self._local_session()
        return spark is not None and staged_reads.positions_view(spark, paths, view_name)

    def iceberg_heads(self, relations: Sequence[str]) -> list[tuple[str, int | None, int]] | None:
        spark = self._local_session()
        if spark is None:
            return None
        found = session_metadata.heads(spark, relations)
        if found is not None:
            self._fresh.update(relations)
        return found

    def iceberg_properties(self, relation: str) -> dict[str, str] | None:
        spark = self._local_session()
        if spark is None:
            return None
        return session_metadata.properties(spark, relation, self._refresh(relation))

    def view_properties(self, relation: str) -> dict[str, str] | None:
        spark = self._local_session()
        if spark is None or relation.count(".") not in (1, 2):
            return None
        *catalog, database, name = relation.split(".")
        # Two-part names resolve in the statements' catalog: only the session catalog's
        # views are read from its metadata.
        if (catalog or [self._catalog_of_statements(spark)]) != ["spark_catalog"]:
            return None
        return session_metadata.view_properties(spark, database, name)

    def view_definition(self, relation: str) -> tuple[str | None, list[str], str] | None:
        spark = self._local_session()
        if spark is None or relation.count(".") != 1:
            return None
        database, name = relation.split(".")
        if self._catalog_of_statements(spark) != "spark_catalog":
            return None
        return session_metadata.view_definition(spark, database, name)

    def iceberg_metadata_json(self, location: str) -> str | None:
        spark = self._local_session()
        return None if spark is None else session_metadata.metadata_json(spark, location)

    def iceberg_snapshot_totals(self, relation: str) -> tuple[int, dict[str, str]] | None:
        spark = self._local_session()
        if spark is None:
            return None
        return session_metadata.snapshot_totals(spark, relation, self._refresh(relation))

    def iceberg_expire(self, relation: str, retain_last: int) -> bool | None:
        spark = self._local_session()
        if spark is None:
            return None
        self._wrote()  # it commits
        return session_metadata.expire_snapshots(spark, relation, retain_last)

    def iceberg_columns(self, relation: str) -> list[tuple[str, str]] | None:
        spark = self._local_session()
        if spark is None:
            return None
        return session_metadata.columns(spark, relation, self._refresh(relation))

    def iceberg_rows_where(
        self, relation: str, column: str, value: int, selected: Sequence[str]
    ) -> list[tuple] | None:
        spark = self._local_session()
        if spark is None:
            return None
        return session_metadata.rows_where(
            spark, relation, column, value, selected, self._refresh(relation)
        )

    def iceberg_window_files(
        self, relation: str, snapshot_ids: Sequence[int], path_field: int
    ) -> list[tuple] | None:
        spark = self._local_session()
        if spark is None:
            return None
        return session_metadata.window_files(spark, relation, snapshot_ids, path_field)

    def scratch_view(self, select: str, view_name: str, eager: bool = True) -> bool:
        """Session method only: compute `select` into the session's block store and name it
        `view_name`. A `CACHE TABLE` view keeps its query's text: every statement that reads
        it parses and analyses the whole query again before it finds the cached rows, which
        for a delta over several states is a 40 KB query and seconds per read. A local
        checkpoint's plan is its rows."""
        spark = self._checkpointing_session()
        if spark is None:
            return False
        # Not eager: the statement that reads them first computes and keeps them (one
        # pass where a count follows; `Session.compute_counted`).
        self._checkpoint(spark, spark.sql(select), view_name, eager, select)
        return True

    def measured_scratch_view(
        self, select: str, view_name: str, measures: Sequence[str]
    ) -> tuple | None:
        """`scratch_view`, computed now, and the aggregates `measures` over its rows,
        gathered as the rows are computed (Spark's observed metrics), so no second query
        reads them (None: this connection cannot make such a view, or Spark reported no
        metrics; the caller then computes and queries the relation itself)."""
        spark = self._checkpointing_session()
        if spark is None:
            return None
        from pyspark.sql import functions

        # A name of its own per call: concurrent dbt threads observe in one session.
        name = f"{view_name}__measures_{next(_OBSERVATIONS)}"
        observed = spark.sql(select).observe(
            name, *(functions.expr(m).alias(f"m{i}") for i, m in enumerate(measures))
        )
        self._checkpoint(spark, observed, view_name, True, select)
        found = observed._jdf.queryExecution().observedMetrics().get(name)
        if found.isEmpty():
            return None
        row = found.get()
        return tuple(row.get(i) for i in range(row.length()))

    def _checkpointing_session(self) -> Any:
        spark = self._local_session()
        # On a cluster a lost executor loses checkpointed rows for good (a cached view
        # recomputes them): there the CACHE TABLE path is kept.
        if spark is None or not is_local_master(spark.sparkContext.master):
            return None
        return spark

    def _checkpoint(self, spark: Any, frame: Any, view_name: str, eager: bool, select: str) -> None:
        self.release_scratch_view(view_name)
        # dbt's log shows every statement it runs; this one runs beside it
        logger.debug(f"spark_ivm: scratch view {view_name} as local checkpoint of: {select}")
        rows = frame.localCheckpoint(eager=eager)
        rows.createOrReplaceTempView(view_name)
        self._checkpointed[view_name] = rows._jdf.queryExecution().logical()

    def count_scratch(self, view_name: str) -> int | None:
        """The rows of a local checkpoint `scratch_view` made, counted over its RDD: one job
        that computes and keeps them, where `SELECT COUNT(*)` took two (adaptive execution
        runs the count's partial aggregate and its final one as jobs of their own)."""
        plan = self._checkpointed.get(view_name)
        return None if plan is None else int(plan.rdd().count())

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
