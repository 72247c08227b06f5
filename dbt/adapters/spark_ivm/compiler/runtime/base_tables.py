"""base_tables: what a state knows about each base table, and whether it can still trust it.

A refresh applies the change of each base table since its watermark. That is only sound if
the table is still the one the state was built from and the columns the model reads still
mean what they meant. Iceberg says both: a table has a uuid (a DROP + CREATE under the same
name gets a new one) and each column an id (a rename keeps it; a dropped and re-added
column, even with the same name and type, gets a new one). The state records, per base
table, the uuid, the schema id and the (id, type) of every column the model reads; a
refresh that finds the table's current metadata file changed reads it and compares:

* another uuid: the table was dropped and re-created -> rebuild;
* the same schema id: nothing the model reads can have changed;
* another schema id: each column the model reads must have the same id and type under the
  same name (an added, dropped or renamed column the model does not read changes nothing;
  `a`/`b` swapped by renames, a re-added column, int widened to bigint do) -> else rebuild.

Example: the model reads `t.k` (id 1, string) and `t.x` (id 2, int). `ALTER TABLE t ADD
COLUMN z` -> schema 1, k and x unchanged -> refresh. Renames swapping x and y -> x now has id
3 -> rebuild, "column x of base table t is another column now (id 2 -> 3)".

A snapshot is read with the schema it was written with; where that differs from the
table's in a column the model reads (a rename no commit has followed), the unchanged table
is read live and the refresh checks before its commit that no commit came in between; a
changed one cannot be read at its old snapshot and the model is rebuilt.

The table's metadata is read from its current metadata file (Iceberg's JSON), found through
the `metadata_log_entries` metadata table; the same file gives the snapshots the capture
walks (`capture.choose_method`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.capture import Snapshot
from dbt.adapters.spark_ivm.compiler.relations import STATE_SUFFIX
from dbt.adapters.spark_ivm.compiler.sql.templates import sql, table


@dataclass(frozen=True)
class TableMetadata:
    """The facts of one Iceberg metadata file that a refresh relies on."""

    location: str  # the metadata file
    uuid: str
    schema_id: int
    columns: Mapping[str, tuple[int, str]]  # lower-case name -> (field id, Iceberg type)
    snapshots: Mapping[int, Snapshot]
    schemas: Mapping[int, Mapping[str, tuple[int, str]]] = field(default_factory=dict)
    snapshot_schemas: Mapping[int, int] = field(default_factory=dict)  # snapshot -> schema id

    def stale(self, snapshot: int | None, read: Sequence[str]) -> bool:
        """Does `VERSION AS OF snapshot` read the columns the model reads other than the table
        does now? Iceberg reads a snapshot with the schema it was written with: after a
        rename (or a drop and re-add) that no commit has followed, `x` at the current
        snapshot is another column than `x` in the table."""
        if snapshot is None or snapshot not in self.snapshot_schemas:
            return False
        then = self.schemas.get(self.snapshot_schemas[snapshot], self.columns)
        return any(then.get(c.lower()) != self.columns.get(c.lower()) for c in read)


def head_sql(relation: str) -> str:
    """The table's current metadata file and snapshot (one row; a table's metadata log ends
    with its current file)."""
    return (
        "SELECT file, latest_snapshot_id, unix_millis(timestamp) AS updated_ms "
        f"FROM {sql(table(relation))}.`metadata_log_entries` "
        "ORDER BY timestamp DESC, file DESC LIMIT 1"
    )


def heads_sql(relations: Sequence[str]) -> str:
    """`head_sql` of several tables in one statement: rows (index, file, latest_snapshot_id,
    updated_ms), one per table, `index` its position in `relations`."""
    parts = [
        f"SELECT {i} AS i, file, latest_snapshot_id, updated_ms FROM ({head_sql(relation)})"
        for i, relation in enumerate(relations)
    ]
    return " UNION ALL ".join(parts)


def metadata_file_sql(location: str) -> str:
    """The lines of a metadata file (Iceberg writes its JSON on one line)."""
    path = exp.Table(this=exp.to_identifier(location, quoted=True), db=exp.to_identifier("text"))
    return sql(exp.Select().select(exp.column("value")).from_(path))


def _type_text(dtype: object) -> str:
    return dtype if isinstance(dtype, str) else json.dumps(dtype, sort_keys=True)


def parse_metadata(location: str, lines: Iterable[Sequence]) -> TableMetadata:
    """A metadata file's JSON (the rows of `metadata_file_sql`) -> TableMetadata."""
    doc = json.loads("".join(str(row[0]) for row in lines))
    schema_id = int(doc.get("current-schema-id", 0))
    schemas = {
        int(schema.get("schema-id", 0)): {
            str(f["name"]).lower(): (int(f["id"]), _type_text(f["type"]))
            for f in schema.get("fields", [])
        }
        for schema in doc.get("schemas", []) or [doc.get("schema", {})]
    }
    columns = schemas.get(schema_id, {})
    snapshots = {}
    snapshot_schemas = {
        int(s["snapshot-id"]): int(s["schema-id"])
        for s in doc.get("snapshots", []) or []
        if s.get("schema-id") is not None
    }
    for s in doc.get("snapshots", []) or []:
        summary = s.get("summary", {}) or {}
        sid = int(s["snapshot-id"])
        parent = s.get("parent-snapshot-id")
        snapshots[sid] = Snapshot(
            sid,
            None if parent is None else int(parent),
            int(summary.get("total-delete-files", 0) or 0),
            str(summary.get("operation", "")),
            _size(summary, "added-files-size"),
            _size(summary, "removed-files-size"),
            _size(summary, "total-files-size"),
            added_delete_files=_size(summary, "added-delete-files"),
            added_equality_deletes=_size(summary, "added-equality-delete-files"),
            data_files=_size(summary, "total-data-files"),
        )
    uuid = str(doc.get("table-uuid", ""))
    return TableMetadata(location, uuid, schema_id, columns, snapshots, schemas, snapshot_schemas)


def total_records(summary: Mapping[str, str]) -> int | None:
    """A snapshot summary's `total-records` (None: not there).

    >>> total_records({"total-records": "42"}), total_records({})
    (42, None)
    """
    records = summary.get("total-records", "")
    return int(records) if records.isdigit() else None


def _size(summary: Mapping, key: str) -> int:
    try:
        return int(summary.get(key, 0) or 0)
    except (TypeError, ValueError):
        return 0


@dataclass(frozen=True)
class BaseRecord:
    """What a state records of one base table in its metadata row (as JSON, `as_json`).

    >>> record = BaseRecord.of({"uuid": "u1", "schema_id": 0, "metadata": "m.json",
    ...     "bytes": 120, "live": False, "columns": {"k": [1, "string"]}})
    >>> record.bytes, record.columns["k"], BaseRecord.of(record.as_json()) == record
    (120, (1, 'string'), True)
    >>> BaseRecord.of({}).metadata is None  # nothing recorded: matches no metadata file
    True
    """

    metadata: str | None  # the table's metadata file when the state read it
    uuid: str | None
    schema_id: int | None
    bytes: int  # the table's size then: what a rebuild read (`cost.py` scales its time by it)
    live: bool  # its pinned snapshot must be read live (`TableMetadata.stale`)
    columns: Mapping[str, tuple[int, str]]  # the columns the model reads: (Iceberg id, type)

    @classmethod
    def of(cls, recorded: Mapping[str, Any] | None) -> BaseRecord:
        """Read from the metadata row's JSON (missing keys: nothing recorded)."""
        recorded = recorded or {}
        columns = recorded.get("columns") or {}
        return cls(
            metadata=recorded.get("metadata"),
            uuid=recorded.get("uuid"),
            schema_id=recorded.get("schema_id"),
            bytes=int(recorded.get("bytes", 0) or 0),
            live=bool(recorded.get("live")),
            columns={str(n): (int(c[0]), str(c[1])) for n, c in columns.items()},
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "live": self.live,
            "bytes": self.bytes,
            "metadata": self.metadata,
            "uuid": self.uuid,
            "schema_id": self.schema_id,
            "columns": {name: list(c) for name, c in self.columns.items()},
        }


def fingerprint(metadata: TableMetadata, read: Sequence[str], snapshot: int | None) -> BaseRecord:
    """What the state records of a base table: identity, schema, the columns it reads, and
    whether its pinned `snapshot` must be read live (`TableMetadata.stale`)."""
    return BaseRecord(
        live=metadata.stale(snapshot, read),
        bytes=metadata.snapshots[snapshot].total_bytes if snapshot in metadata.snapshots else 0,
        metadata=metadata.location,
        uuid=metadata.uuid,
        schema_id=metadata.schema_id,
        columns={
            name: metadata.columns[name]
            for name in (c.lower() for c in read)
            if name in metadata.columns
        },
    )


def untrusted(
    relation: str, recorded: BaseRecord, now: TableMetadata, read: Sequence[str]
) -> str | None:
    """Why the recorded state of `relation` no longer describes it (None: it still does)."""
    if recorded.uuid != now.uuid:
        why = f"base table {relation} was dropped and re-created since the last refresh"
        if relation.endswith(STATE_SUFFIX):
            upstream = relation[: -len(STATE_SUFFIX)]
            return f"{why}: the upstream ivm model {upstream} was rebuilt"
        return why
    if recorded.schema_id == now.schema_id:
        return None
    before = recorded.columns
    names = [c.lower() for c in read]
    for name in names:
        if name not in now.columns:
            return f"column {name} of base table {relation} is gone"
        if name not in before:
            return f"the model now reads column {name} of base table {relation} (select *?)"
        old_id, old_type = before[name]
        new_id, new_type = now.columns[name]
        if old_id != new_id:
            return (
                f"column {name} of base table {relation} is another column now "
                f"(Iceberg column id {old_id} -> {new_id}: renamed, or dropped and re-added)"
            )
        if old_type != new_type:
            return f"column {name} of base table {relation} changed type ({old_type} -> {new_type})"
    dropped = sorted(set(before) - set(names))
    if dropped:
        return f"the model no longer reads column(s) {', '.join(dropped)} of base table {relation}"
    return None
