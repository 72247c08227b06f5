"""session_metadata: Iceberg table metadata read through the embedded session's JVM.

A refresh reads, before anything else, each base table's head (its current metadata file
and snapshot) and, when a head moved, that metadata file; after its commit it reads the
state table's snapshot totals to decide upkeep (`compiler/runtime/upkeep.py`). As SQL each of those
is a Spark job over a metadata table or a text file: 0.1-0.17 s on these 2 cores, and a
no-change refresh is little else. The Iceberg API in the driver answers the same questions
from the catalog and the metadata file directly (10-25 ms, no job).

Session method only (through thrift the SQL path stays). Every function returns None where
it cannot answer, and the caller then asks Spark in SQL, whose errors name the problem.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from dbt.adapters.spark_ivm.java_classes import java_class, string_array

#: Iceberg's Spark table, what Spark's catalogs hand back for an Iceberg table.
_SPARK_TABLE = "org.apache.iceberg.spark.source.SparkTable"


def _catalog_table(spark: Any, relation: str, refresh: bool = True) -> Any:
    """Spark's catalog table `db.name` or `catalog.db.name` (Iceberg's `SparkTable`), loaded
    from the catalog Spark SQL resolves the name in, its Iceberg table refreshed from the
    metastore (unless `refresh` is False: the caller refreshed it lately, and the refresh is
    most of the read, 10-20 ms of a metastore lookup against 3 ms); ValueError for anything
    else (a view, a parquet or hive table, a bare name).

    Loaded from the catalog, not by analysing `spark.table(name)` (which loads it the same
    way, after a parse, Spark's own metastore lookups and the analyser's rules: 25 of a
    read's 40-70 ms) and not through `Spark3Util.loadIcebergTable`: from a thread other than
    the one that first used the catalog, as dbt's model threads are, a lookup without the
    session active in the thread misses and the session catalog hands back a V1 table.

    The catalog caches the Iceberg table object every later statement of the session reads
    through; the refresh updates that object, so those statements see other writers'
    commits as `REFRESH TABLE` would make them."""
    parts = relation.split(".")
    if len(parts) < 2 or not all(parts):
        raise ValueError(f"{relation} names no catalog table")
    manager = active_session(spark).sessionState().catalogManager()
    # Spark's `CatalogAndIdentifier`: a first part that names a catalog is the catalog.
    if len(parts) > 2 or manager.isCatalogRegistered(parts[0]):
        catalog, path = manager.catalog(parts[0]), parts[1:]
    else:
        catalog, path = manager.currentCatalog(), parts
    identifier = java_class(spark, "org.apache.spark.sql.connector.catalog.Identifier")
    found = catalog.loadTable(identifier.of(string_array(spark, path[:-1]), path[-1]))
    if str(found.getClass().getName()) != _SPARK_TABLE:
        raise ValueError(f"{relation} is not an Iceberg catalog table")
    if refresh:
        found.table().operations().refresh()  # SparkTable -> org.apache.iceberg.Table
    return found


def iceberg_table(spark: Any, relation: str, refresh: bool = True) -> Any:
    """The Iceberg table `db.name`, refreshed unless told not to (`_catalog_table`)."""
    return _catalog_table(spark, relation, refresh).table()


#: What `SHOW TBLPROPERTIES` leaves out of a catalog table's properties (Spark's
#: `CatalogV2Util.TABLE_RESERVED_PROPERTIES`; DESCRIBE shows them).
_RESERVED_PROPERTIES = frozenset(
    {"comment", "location", "provider", "owner", "external", "is_managed_location"}
)


def _as_dict(spark: Any, found: Any) -> dict[str, str]:
    """A JVM map of strings (Java's, or Scala's immutable one) as a dict, in one call: as
    JSON, where walking its entries through py4j took three round trips each (a view's
    properties read that way: 28-40 ms against 8)."""
    if found.getClass().getName().startswith("scala."):
        found = java_class(spark, "scala.collection.JavaConverters").mapAsJavaMap(found)
    mapper = java_class(spark, "com.fasterxml.jackson.databind.ObjectMapper")()
    return {str(k): str(v) for k, v in json.loads(mapper.writeValueAsString(found)).items()}


def properties(spark: Any, relation: str, refresh: bool = True) -> dict[str, str] | None:
    """The table's properties as `SHOW TBLPROPERTIES` lists them, read from the catalog's
    table (refreshed first, unless `refresh` is False) without running a statement; None for
    anything but an Iceberg catalog table (a view, a parquet or hive table, no such
    relation), which the SQL path answers or reports."""
    try:
        listed = _as_dict(spark, _catalog_table(spark, relation, refresh).properties())
    except Exception:  # noqa: BLE001 - the SQL path answers, or names the problem
        return None
    return {k: v for k, v in listed.items() if k not in _RESERVED_PROPERTIES}


def active_session(spark: Any) -> Any:
    """The session's JVM object, made the calling thread's active session first: Spark's
    catalogs read the thread's SQL conf, which in dbt's model threads (no session active)
    is not the session's (a default catalog `lake` would answer `spark_catalog`)."""
    session = spark._jsparkSession
    java_class(spark, "org.apache.spark.sql.SparkSession").setActiveSession(session)
    return session


def view_properties(spark: Any, database: str, name: str) -> dict[str, str] | None:
    """The properties of the session catalog's view `database.name` as `SHOW TBLPROPERTIES`
    lists them, from the metastore's entry (no statement: the view's query is not even
    analysed); None for anything but a view there.

    Read from the external catalog, one metastore call, where the session catalog's
    `getTableMetadata` first asks whether the database and the table exist (three calls);
    names lower-cased as the session catalog would (the metastore keeps them so)."""
    try:
        external = active_session(spark).sessionState().catalog().externalCatalog()
        found = external.getTable(database.lower(), name.lower())
        if str(found.tableType().name()) != "VIEW":
            return None
        return _as_dict(spark, found.properties())
    except Exception:  # noqa: BLE001 - the SQL path answers, or names the problem
        return None


def view_definition(
    spark: Any, database: str, name: str
) -> tuple[str | None, list[str], str] | None:
    """What `DESCRIBE TABLE EXTENDED` shows of the session catalog's relation
    `database.name` where it is a view: its `View Text`, its columns and its `View Catalog
    and Namespace` (dotted), from the metastore's entry, one call, no statement; `(None, [],
    "")` where the relation is not a view (a table); None where it cannot tell (no such
    relation: the SQL path says)."""
    try:
        external = active_session(spark).sessionState().catalog().externalCatalog()
        # No such relation raises: None, as for anything it cannot tell.
        found = external.getTable(database.lower(), name.lower())
        if str(found.tableType().name()) != "VIEW":
            return (None, [], "")
        text = found.viewText()
        columns = [str(c) for c in found.schema().fieldNames()]
        namespace = str(found.viewCatalogAndNamespace().mkString("."))
        return (str(text.get()) if text.isDefined() else None, columns, namespace)
    except Exception:  # noqa: BLE001 - the SQL path answers, or names the problem
        return None


def heads(spark: Any, relations: Sequence[str]) -> list[tuple[str, int | None, int]] | None:
    """(current metadata file, current snapshot id or None, when it was written in epoch
    milliseconds) of each table, in order: what `base_tables.heads_sql` reads from
    `metadata_log_entries`, whose last entry is the current metadata file."""
    found: list[tuple[str, int | None, int]] = []
    try:
        for relation in relations:
            current = iceberg_table(spark, relation).operations().current()
            snapshot = current.currentSnapshot()
            found.append(
                (
                    str(current.metadataFileLocation()),
                    None if snapshot is None else int(snapshot.snapshotId()),
                    int(current.lastUpdatedMillis()),
                )
            )
    except Exception:  # noqa: BLE001 - e.g. not an Iceberg table: the SQL path says so
        return None
    return found


def _local_file_text(location: str) -> str | None:
    """The text of a file on this machine's file system (a `file:` URI or an absolute path),
    gzip-compressed or not; None for any other file system or a file that cannot be read."""
    if location.startswith("file:"):
        path = Path(unquote(urlparse(location).path))
    elif location.startswith("/"):
        path = Path(location)
    else:
        return None
    try:
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":  # Iceberg writes .gz.metadata.json when asked to
            data = gzip.decompress(data)
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError, EOFError):
        return None


def metadata_json(spark: Any, location: str) -> str | None:
    """The JSON of the Iceberg metadata file at `location` (what `SELECT value FROM
    text.<location>` reads): read from the local file system where it lies there (the
    driver runs in this process: 1 ms, where handing Iceberg's JSON of 60 KB through py4j
    took 45-50 ms), else parsed and written back by Iceberg itself."""
    local = _local_file_text(location)
    if local is not None:
        return local
    try:
        io = java_class(spark, "org.apache.iceberg.hadoop.HadoopFileIO")(
            spark._jsc.hadoopConfiguration()
        )
        parser = java_class(spark, "org.apache.iceberg.TableMetadataParser")
        return str(parser.toJson(parser.read(io, location)))
    except Exception:  # noqa: BLE001 - the SQL path reports what is wrong with the file
        return None


def columns(spark: Any, relation: str, refresh: bool = True) -> list[tuple[str, str]] | None:
    """The Iceberg table's (column, type) pairs as `DESCRIBE TABLE` lists them (each type's
    `simpleString`, as Spark's DESCRIBE of a catalog table writes it), from the catalog
    table (refreshed first, unless `refresh` is False); None for anything else."""
    try:
        schema = _catalog_table(spark, relation, refresh).schema()
        return [(str(f.name()), str(f.dataType().simpleString())) for f in schema.fields()]
    except Exception:  # noqa: BLE001 - the SQL path answers, or names the problem
        return None


#: More matching rows than a caller of `rows_where` can use (it wants one, or learns of two).
_ROWS_WHERE_LIMIT = 2


def rows_where(
    spark: Any,
    relation: str,
    column: str,
    value: int,
    selected: Sequence[str],
    refresh: bool = True,
) -> list[tuple] | None:
    """Up to two rows of `SELECT <selected> FROM relation WHERE column = value`, read in the
    driver by Iceberg's generic reader (its delete files applied, the filter pruning files
    by their column bounds and then rows): no Spark job, for a slice of a few rows such as
    the state's metadata row. None where it cannot answer (not an Iceberg table, a column it
    does not have)."""
    try:
        names = string_array(spark, [column, *selected])
        match = java_class(spark, "org.apache.iceberg.expressions.Expressions").equal(column, value)
        generics = java_class(spark, "org.apache.iceberg.data.IcebergGenerics")
        scan = generics.read(iceberg_table(spark, relation, refresh))
        records = scan.where(match).select(names).build()
        found: list[tuple] = []
        try:
            iterator = records.iterator()
            while iterator.hasNext() and len(found) < _ROWS_WHERE_LIMIT:
                record = iterator.next()
                if record.getField(column) == value:  # the reader filters; this makes sure
                    found.append(tuple(record.getField(name) for name in selected))
        finally:
            records.close()
    except Exception:  # noqa: BLE001 - the SQL path answers, or names the problem
        return None
    return found


def snapshot_totals(
    spark: Any, relation: str, refresh: bool = True
) -> tuple[int, dict[str, str]] | None:
    """The table's number of snapshots and its current snapshot's summary (in one call, as
    JSON: walking a summary's ~20 entries through py4j took ~70 round trips)."""
    try:
        current = iceberg_table(spark, relation, refresh).operations().current()
        snapshot = current.currentSnapshot()
        summary = {} if snapshot is None else _as_dict(spark, snapshot.summary())
        return int(current.snapshots().size()), summary
    except Exception:  # noqa: BLE001 - the SQL path reads the snapshots table instead
        return None


def expire_snapshots(spark: Any, relation: str, retain_last: int) -> bool | None:
    """Expire the table's snapshots older than its current one but the newest `retain_last`,
    deleting the files no kept snapshot references, through Iceberg's table API in the
    driver (True). None where the relation is not a catalog Iceberg table (the caller then
    calls `expire_snapshots` in SQL); a failed commit raises.

    The procedure does the same as a Spark action: it lists every file of the kept and the
    expired snapshots in Spark jobs, 1.1-1.6 s for a table of 16 small snapshots on two cores
    where the driver reads their few manifests in 0.15 s."""
    try:
        table = iceberg_table(spark, relation)
    except Exception:  # noqa: BLE001 - not an Iceberg catalog table: the SQL path says
        return None
    current = table.currentSnapshot()
    if current is None:
        return True  # nothing to expire
    expire = table.expireSnapshots()
    _reachable_cleanup(spark, expire)
    expire.expireOlderThan(current.timestampMillis()).retainLast(retain_last).commit()
    return True


def _reachable_cleanup(spark: Any, expire: Any) -> bool:
    """Have the expiry delete every file no kept snapshot references, as the procedure does
    (False where it cannot).

    On a table with one branch the API's default is its incremental cleanup, which leaves
    the files the oldest kept snapshot replaced until the next expiry (a rebuilt state kept
    one old version of itself on disk: 2 of 12 files in a run of 16 overwrites). The switch
    is not public in Iceberg 1.10 (`RemoveSnapshots.withIncrementalCleanup`); where another
    version lacks it, the incremental cleanup stands."""
    try:
        gateway = spark.sparkContext._gateway
        flag = gateway.new_array(java_class(spark, "java.lang.Class"), 1)
        flag[0] = java_class(spark, "java.lang.Boolean").TYPE
        method = expire.getClass().getDeclaredMethod("withIncrementalCleanup", flag)
        method.setAccessible(True)
        value = gateway.new_array(java_class(spark, "java.lang.Object"), 1)
        value[0] = java_class(spark, "java.lang.Boolean").FALSE
        method.invoke(expire, value)
    except Exception:  # noqa: BLE001 - see the docstring
        return False
    return True


def window_files(
    spark: Any, relation: str, snapshot_ids: Sequence[int], path_field: int
) -> list[tuple] | None:
    """What `capture.touched_files.entries_sql` reads from `all_entries`, read in the driver
    from the manifests the window's snapshots wrote (no Spark job): (status 1 added /
    2 removed, content 0 data / 1 position / 2 equality deletes, path, lower and upper bound
    of the field `path_field` as text, or for a deletion vector the data file it names, or
    None, and the file format) per file a snapshot added or removed.

    A snapshot's added and removed files are the entries of that status and snapshot id in
    the manifests it wrote (a manifest merged later lists them as existing). Read through
    the manifests, not `Snapshot.removedDeleteFiles`, which drops the removed files' bounds."""
    try:
        table = iceberg_table(spark, relation)
        io, specs = table.io(), table.specs()
        manifests = java_class(spark, "org.apache.iceberg.ManifestFiles")
        text_type = java_class(spark, "org.apache.iceberg.types.Types$StringType").get()
        conversions = java_class(spark, "org.apache.iceberg.types.Conversions")

        def bound(bounds: Any) -> str | None:
            found = None if bounds is None else bounds.get(path_field)
            return None if found is None else str(conversions.fromByteBuffer(text_type, found))

        rows: list[tuple] = []
        for snapshot_id in snapshot_ids:
            snapshot = table.snapshot(snapshot_id)
            if snapshot is None:
                return None
            for read, listed in (
                (manifests.read, snapshot.dataManifests(io)),
                (manifests.readDeleteManifest, snapshot.deleteManifests(io)),
            ):
                for manifest in listed:
                    writer = manifest.snapshotId()
                    if writer is not None and int(writer) != snapshot_id:
                        continue  # its entries of this window are another snapshot's
                    reader = read(manifest, io, specs)
                    try:
                        entries = reader.entries().iterator()
                        while entries.hasNext():
                            entry = entries.next()
                            status = int(entry.status().id())
                            if status == 0 or int(entry.snapshotId()) != snapshot_id:
                                continue  # EXISTING: a file carried over, not changed
                            f = entry.file()
                            content = int(f.content().id())
                            low = high = None
                            if content != 0:
                                low, high = bound(f.lowerBounds()), bound(f.upperBounds())
                                # a deletion vector has no bounds: it names its data file
                                referenced = f.referencedDataFile()
                                if low is None and referenced is not None:
                                    low = high = str(referenced)
                            rows.append(
                                (status, content, str(f.location()), low, high, str(f.format()))
                            )
                    finally:
                        reader.close()
    except Exception:  # noqa: BLE001 - the SQL path reads `all_entries` instead
        return None
    return rows
