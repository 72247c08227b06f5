"""executor: what the model's connection can do, and its plain answers.

Every connection runs SQL (`Executor`). The session method can do more without a Spark job
(read Iceberg metadata, expose a changelog scan or computed rows as temp views, read some of
a table's files); each such capability is a protocol checked at run time, and where a
connection lacks it the runtime takes the SQL path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from dbt.adapters.spark_ivm.compiler.sql import state_table
from dbt.adapters.spark_ivm.compiler.sql.templates import sql, table


class Executor(Protocol):
    """Runs SQL on the model's connection (the dbt connection in the plugin)."""

    def execute(self, statement: str) -> None: ...

    def fetch(self, statement: str) -> list[tuple]: ...


@runtime_checkable
class ChangelogReader(Protocol):
    """An executor that can also expose an Iceberg table's raw changelog scan as a temp view
    (the session method; `capture/changelog.py` says why that is cheaper than the CALL)."""

    def changelog_view(self, relation: str, options: dict[str, str], view_name: str) -> bool:
        """Create `view_name` over the `changes` table of `relation` read with `options`;
        False when this connection cannot (then the procedure is used)."""
        ...


@runtime_checkable
class ScratchWriter(Protocol):
    """An executor that can compute a scratch relation into a temp view whose plan is its
    computed rows, not its query (the session method; `render.create_scratch_sql`)."""

    def scratch_view(self, select: str, view_name: str, eager: bool = True) -> bool:
        """Expose the rows of `select` as `view_name`, computed now (`eager`) or by the
        first statement that reads them, once; False when this connection cannot (then
        `CACHE TABLE .. AS` is used)."""
        ...

    def measured_scratch_view(
        self, select: str, view_name: str, measures: Sequence[str]
    ) -> tuple | None:
        """`scratch_view` computed now, and the values of the aggregate expressions
        `measures` over its rows, gathered in the same pass; None when this connection
        cannot or the values were not gathered (then the relation is computed as any
        scratch relation and a query over it computes them)."""
        ...

    def count_scratch(self, view_name: str) -> int | None:
        """The number of rows of `view_name`, made by `scratch_view`, counted by one Spark
        job that computes and keeps them (None: not such a view; then a `COUNT(*)` runs)."""
        ...

    def release_scratch_view(self, view_name: str) -> None:
        """Free the rows `scratch_view` kept for `view_name` (after its view is dropped)."""
        ...

    def drop_scratch_view(self, view_name: str) -> bool:
        """Drop the session's temp view `view_name` (a scratch relation of either kind) and
        free its rows, without a statement; False when this connection cannot (then
        `render.drop_scratch_sql` runs)."""
        ...


@runtime_checkable
class FileScanReader(Protocol):
    """An executor that can read an Iceberg table at a snapshot through some of its data
    files only (the session method; `capture/merge_on_read.py`)."""

    def file_scan_view(
        self,
        relation: str,
        snapshot: int,
        keep: Callable[[str], bool],
        view_name: str,
        positions: bool = False,
    ) -> tuple[int, int] | None:
        """Create `view_name` over the rows `relation` had at `snapshot` in the data files
        whose path `keep` accepts (with `positions`, and their `_file` and `_pos`); (files
        read, files planned), or None when this connection cannot (then SQL reads the whole
        version). `release_scratch_view` frees it."""
        ...

    def delete_positions_view(self, paths: Sequence[str], view_name: str) -> bool:
        """Create `view_name` over the (`file_path`, `pos`) rows of the Parquet position
        delete files `paths` (`capture/position_deletes.py`); False when it cannot."""
        ...


@runtime_checkable
class StatementCounter(Protocol):
    """An executor that counts the statements it ran: any of them may have written a table,
    so what was read of tables before it is read again (`session.HeadsRead`)."""

    def statements_run(self) -> int:
        """How many statements `execute` ran so far."""
        ...


@runtime_checkable
class SnapshotExpirer(Protocol):
    """An executor that can expire a table's old snapshots without a Spark job (the session
    method, `session_metadata.expire_snapshots`)."""

    def iceberg_expire(self, relation: str, retain_last: int) -> bool | None:
        """Expire the snapshots older than the current one but the newest `retain_last`
        (True), or None where it cannot (then `upkeep.expire_sql` in SQL). Counts as a
        statement (`StatementCounter`): it commits."""
        ...


@runtime_checkable
class SoleWriter(Protocol):
    """An executor that can tell whether no other process can commit to its tables."""

    def sole_writer(self) -> bool:
        """True only where no other run can commit to a table this one writes (the embedded
        session over the metastore this process holds: `metastore_lock.py`)."""
        ...


@runtime_checkable
class MetadataReader(Protocol):
    """An executor that can read Iceberg table metadata without a Spark job (the session
    method, `session_metadata.py`); each method returns None where it cannot, and the SQL
    path is taken."""

    def iceberg_heads(self, relations: Sequence[str]) -> list[tuple[str, int | None, int]] | None:
        """(current metadata file, current snapshot id, its time) of each table, in order, each table
        refreshed in the session's catalog as `REFRESH TABLE` would."""
        ...

    def iceberg_properties(self, relation: str) -> dict[str, str] | None:
        """The Iceberg table's properties as `SHOW TBLPROPERTIES` lists them."""
        ...

    def iceberg_metadata_json(self, location: str) -> str | None:
        """The JSON of the metadata file at `location`."""
        ...

    def iceberg_snapshot_totals(self, relation: str) -> tuple[int, dict[str, str]] | None:
        """The table's snapshot count and its current snapshot's summary."""
        ...

    def iceberg_columns(self, relation: str) -> list[tuple[str, str]] | None:
        """The table's (column, type) pairs as `DESCRIBE TABLE` lists them."""
        ...

    def iceberg_rows_where(
        self, relation: str, column: str, value: int, selected: Sequence[str]
    ) -> list[tuple] | None:
        """Up to two rows of `SELECT <selected> FROM relation WHERE column = value`."""
        ...

    def iceberg_window_files(
        self, relation: str, snapshot_ids: Sequence[int], path_field: int
    ) -> list[tuple] | None:
        """The files the snapshots added or removed, as `touched_files.entries_sql` reads
        them: (status, content, path, lower and upper bound of field `path_field`)."""
        ...


@runtime_checkable
class ViewReader(Protocol):
    """An executor that reads a view's properties from the session's catalog without a
    statement (the session method: 23 against 62 ms a call, measured warm)."""

    def view_properties(self, relation: str) -> dict[str, str] | None:
        """The view's properties as `SHOW TBLPROPERTIES` lists them; None where it cannot
        tell (not a view of the session catalog, no such relation: the SQL path says)."""
        ...

    def view_definition(self, relation: str) -> tuple[str | None, list[str], str] | None:
        """A two-part name of the session catalog: `(text, columns, namespace)` as
        `DESCRIBE TABLE EXTENDED` shows them where it is a view, `(None, [], "")` where it is
        a table; None where it cannot tell (the SQL path says)."""
        ...


def describe_columns(rows: Sequence[tuple]) -> list[tuple[str, str]]:
    """Column (name, type) pairs of a DESCRIBE TABLE / DESCRIBE QUERY result."""
    out: list[tuple[str, str]] = []
    for row in rows:
        name, dtype = (row[0] or "").strip(), (row[1] or "").strip()
        if not name or name.startswith("#"):
            break
        out.append((name, dtype))
    return out


def table_properties(fetch: Callable[[str], list[tuple]], relation: str) -> dict[str, str]:
    """A relation's TBLPROPERTIES as a dict."""
    rows = fetch(f"SHOW TBLPROPERTIES {sql(table(relation))}")
    return {str(r[0]): str(r[1]) for r in rows if len(r) >= 2}


def view_properties(executor: Executor, relation: str) -> dict[str, str]:
    """A view's (or any relation's) TBLPROPERTIES: from the session's catalog where the
    executor reads them there (`ViewReader`), else in SQL, which raises when there is no
    such relation."""
    if isinstance(executor, ViewReader):
        found = executor.view_properties(relation)
        if found is not None:
            return found
    return table_properties(executor.fetch, relation)


def relation_properties(executor: Executor, relation: str) -> dict[str, str]:
    """A relation's TBLPROPERTIES: an Iceberg table's from the session's catalog when the
    executor can read them there (no statement, `session_metadata.py`), else in SQL, which
    raises when there is no such relation."""
    if isinstance(executor, MetadataReader):
        found = executor.iceberg_properties(relation)
        if found is not None:
            return found
    return table_properties(executor.fetch, relation)


def meta_rows(executor: Executor, state: str) -> list[tuple]:
    """`state_table.meta_sql`'s rows (a state's metadata row): read by the driver where the
    session can (the row's file, no Spark job: 0.085-0.1 s a refresh on these 2 cores), else
    in SQL."""
    if isinstance(executor, MetadataReader):
        found = executor.iceberg_rows_where(state, state_table.ROW, 1, [state_table.META])
        if found is not None:
            return found
    return executor.fetch(state_table.meta_sql(state))


def is_iceberg(props: dict[str, str]) -> bool:
    """Iceberg's own tables report `format=iceberg/...`; the HMS entry says table_type=ICEBERG."""
    return props.get("format", "").lower().startswith("iceberg") or (
        props.get("table_type", "").upper() == "ICEBERG"
    )
