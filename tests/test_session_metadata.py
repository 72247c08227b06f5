"""In session mode a refresh reads Iceberg metadata through the driver's JVM
(`session_metadata.py`) instead of SQL over metadata tables: it must read exactly what the
SQL path reads, for a base table and a state table after builds, changes, refreshes and a
schema change, and fall back (None) where it cannot answer.

Always on the embedded Spark (the JVM path exists only there); the thrift path is the SQL
one, which the thrift tests run.
"""

from __future__ import annotations

import json
import threading

import pytest
from support.small_project import SmallProject

from dbt.adapters.spark_ivm import session_metadata
from dbt.adapters.spark_ivm.compiler.frontend import views
from dbt.adapters.spark_ivm.compiler.runtime import base_tables, upkeep

SCHEMA = "ivm_session_metadata"
BASE = f"{SCHEMA}.base"
MODEL = "by_group"
STATE = f"{SCHEMA}.{MODEL}__ivm_state"
MIN_MAX = "extremes"  # its state keeps ranked lists: array and struct columns


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> SmallProject:
    p = SmallProject(
        tmp_path_factory.mktemp("session_metadata"), "session_metadata", SCHEMA, "session"
    )
    p.model(MODEL, f"select g, count(*) as n, sum(x) as total from {BASE} group by g")
    p.model(MIN_MAX, f"select g, max(x) as hi, min(x) as lo, avg(x) as mean from {BASE} group by g")
    assert p.dbt("debug").success
    p.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    p.sql(f"DROP TABLE IF EXISTS {BASE}")
    p.sql(f"CREATE TABLE {BASE} (g STRING, x INT) USING iceberg")
    p.sql(f"INSERT INTO {BASE} VALUES ('a', 1), ('b', 2), (NULL, 3)")
    assert p.dbt("run").success
    p.sql(f"UPDATE {BASE} SET x = x + 1 WHERE g = 'a'")
    p.sql(f"ALTER TABLE {BASE} ADD COLUMN y STRING")
    p.sql(f"DELETE FROM {BASE} WHERE g IS NULL")
    assert p.dbt("run").success
    return p


def _spark():
    from pyspark.sql import SparkSession

    return SparkSession.builder.getOrCreate()


def test_heads_and_metadata_files_are_what_sql_reads(project: SmallProject) -> None:
    relations = [BASE, STATE]
    by_sql = {
        int(r[0]): (str(r[1]), r[2], int(r[3]))
        for r in project.sql(base_tables.heads_sql(relations))
    }
    read = session_metadata.heads(_spark(), relations)
    assert read == [by_sql[0], by_sql[1]]
    assert all(snapshot is not None for _, snapshot, _ in read)
    for location, _, _ in read:
        lines = project.sql(base_tables.metadata_file_sql(location))
        text = session_metadata.metadata_json(_spark(), location)
        assert text is not None
        assert json.loads(text) == json.loads("".join(str(r[0]) for r in lines))
        assert base_tables.parse_metadata(location, [(text,)]) == base_tables.parse_metadata(
            location, lines
        )


def test_a_model_thread_reads_them_too(project: SmallProject) -> None:
    """dbt refreshes models in threads of their own; the JVM path must work there (a catalog
    lookup through `Spark3Util.loadIcebergTable` did not: it found a V1 table)."""
    by_sql = {
        int(r[0]): (str(r[1]), r[2], int(r[3])) for r in project.sql(base_tables.heads_sql([BASE]))
    }
    found: list = []
    worker = threading.Thread(target=lambda: found.append(session_metadata.heads(_spark(), [BASE])))
    worker.start()
    worker.join()
    assert found == [[by_sql[0]]]


def test_properties_are_what_show_tblproperties_lists(project: SmallProject) -> None:
    """A base table's properties (is it Iceberg, its write modes) are read through the JVM;
    they must be what `SHOW TBLPROPERTIES` returns, also after the table changed under the
    session (a property set by statement)."""
    for relation in (BASE, STATE):
        by_sql = {str(r[0]): str(r[1]) for r in project.sql(f"SHOW TBLPROPERTIES {relation}")}
        assert session_metadata.properties(_spark(), relation) == by_sql
        assert by_sql["format"].startswith("iceberg")
    project.sql(f"ALTER TABLE {BASE} SET TBLPROPERTIES ('ivm.test' = 'x')")
    read = session_metadata.properties(_spark(), BASE)
    assert read is not None and read["ivm.test"] == "x"
    assert read == {str(r[0]): str(r[1]) for r in project.sql(f"SHOW TBLPROPERTIES {BASE}")}


def test_view_properties_are_what_show_tblproperties_lists(project: SmallProject) -> None:
    """The model's view keeps the refresh's properties (view digests, the state it reads);
    read from the metastore's entry, also from a model thread and by an upper-case name,
    they must be what `SHOW TBLPROPERTIES` returns; a table or no relation is left to SQL."""
    by_sql = {str(r[0]): str(r[1]) for r in project.sql(f"SHOW TBLPROPERTIES {SCHEMA}.{MODEL}")}
    assert session_metadata.view_properties(_spark(), SCHEMA, MODEL) == by_sql
    found: list = []
    worker = threading.Thread(
        target=lambda: found.append(
            session_metadata.view_properties(_spark(), SCHEMA.upper(), MODEL.upper())
        )
    )
    worker.start()
    worker.join()
    assert found == [by_sql]
    assert session_metadata.view_properties(_spark(), SCHEMA, "base") is None
    assert session_metadata.view_properties(_spark(), SCHEMA, "missing") is None


def test_view_definitions_are_what_describe_shows(project: SmallProject) -> None:
    """A view's text, columns and namespace read from the metastore's entry give the
    definition (and so the digest a model over it records) that `DESCRIBE TABLE EXTENDED`
    gives, for the model's own view and a hand-made one named in mixed case, as a model may
    name it (the metastore keeps lower-case names and refuses others than letters, digits and
    `_` for a view: `Invalid Hive object`); a table is no view, and no relation is left to
    SQL."""
    hand = "_Hand_View2"
    project.sql(
        f"CREATE OR REPLACE VIEW {SCHEMA}.`{hand}` (g, doubled) AS "
        f"SELECT g, x * 2 FROM {BASE} WHERE x IS NOT NULL"
    )

    def fetch(statement: str) -> list[tuple]:
        return [tuple(r) for r in _spark().sql(statement).collect()]

    for name in (MODEL, hand):
        found = session_metadata.view_definition(_spark(), SCHEMA, name)
        assert found is not None, name
        relation = f"{SCHEMA}.{name}"
        by_catalog = views.definition(relation, *found, "m")
        by_sql = views.read_definition(fetch, relation, "m")
        assert by_catalog == by_sql and by_catalog.digest == by_sql.digest
    assert session_metadata.view_definition(_spark(), SCHEMA, "base") == (None, [], "")
    assert session_metadata.view_definition(_spark(), SCHEMA, "missing") is None


def test_state_totals_are_what_the_snapshots_table_says(project: SmallProject) -> None:
    from_sql = upkeep.parse_stats(project.sql(upkeep.stats_sql(STATE))[0])
    totals = session_metadata.snapshot_totals(_spark(), STATE)
    assert totals is not None
    read = upkeep.from_summary(*totals)
    assert (read.snapshots, read.data_files, read.delete_files, read.total_bytes) == (
        from_sql.snapshots,
        from_sql.data_files,
        from_sql.delete_files,
        from_sql.total_bytes,
    )
    assert read.snapshots >= 2 and read.data_files


def test_what_is_not_an_iceberg_table_is_left_to_sql(project: SmallProject) -> None:
    project.sql(f"CREATE OR REPLACE VIEW {SCHEMA}.v AS SELECT 1 AS one")
    assert session_metadata.heads(_spark(), [BASE, f"{SCHEMA}.v"]) is None
    assert session_metadata.heads(_spark(), [f"{SCHEMA}.missing"]) is None
    assert session_metadata.snapshot_totals(_spark(), f"{SCHEMA}.v") is None
    assert session_metadata.properties(_spark(), f"{SCHEMA}.v") is None
    assert session_metadata.properties(_spark(), f"{SCHEMA}.missing") is None
    project.sql(f"CREATE TABLE IF NOT EXISTS {SCHEMA}.plain (k INT) USING parquet")
    assert session_metadata.properties(_spark(), f"{SCHEMA}.plain") is None
    assert session_metadata.metadata_json(_spark(), "file:/nonexistent/v1.metadata.json") is None


def test_rows_where_reads_what_sql_reads_through_delete_files(project: SmallProject) -> None:
    """The state's metadata row is read in the driver (`rows_where`): it must be the row SQL
    reads, after MERGEs that left delete files in the state, and a table's rows with its
    position deletes applied; at most two rows; None where SQL must answer."""
    meta_sql = f"SELECT __ivm_meta__ FROM {STATE} WHERE __ivm_row__ = 1"
    read = session_metadata.rows_where(_spark(), STATE, "__ivm_row__", 1, ["__ivm_meta__"])
    assert read == [tuple(r) for r in project.sql(meta_sql)] and len(read) == 1
    assert json.loads(read[0][0])["watermarks"]
    mor = f"{SCHEMA}.mor"
    project.sql(f"DROP TABLE IF EXISTS {mor}")
    project.sql(
        f"CREATE TABLE {mor} (k INT, v STRING) USING iceberg TBLPROPERTIES ("
        "'format-version'='2', 'write.delete.mode'='merge-on-read', "
        "'write.update.mode'='merge-on-read')"
    )
    project.sql(f"INSERT INTO {mor} VALUES (1, 'a'), (2, 'b'), (3, 'c'), (2, NULL)")
    project.sql(f"DELETE FROM {mor} WHERE v IS NULL")
    project.sql(f"UPDATE {mor} SET v = 'c2' WHERE k = 3")
    deletes = project.sql(f"SELECT COUNT(*) FROM {mor}.delete_files")[0][0]
    assert deletes >= 1  # the rows below are read through position delete files
    for k in (1, 2, 3, 4):
        sql_rows = [tuple(r) for r in project.sql(f"SELECT v FROM {mor} WHERE k = {k}")]
        assert session_metadata.rows_where(_spark(), mor, "k", k, ["v"]) == sql_rows
    project.sql(f"INSERT INTO {mor} VALUES (5, 'x'), (5, 'y'), (5, 'z')")
    assert len(session_metadata.rows_where(_spark(), mor, "k", 5, ["v"]) or []) == 2
    assert session_metadata.rows_where(_spark(), mor, "nope", 1, ["v"]) is None
    assert session_metadata.rows_where(_spark(), f"{SCHEMA}.v", "one", 1, ["one"]) is None


def test_metadata_files_are_read_from_the_local_disk_also_compressed(
    project: SmallProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A metadata file on this machine's disk is read directly (not through py4j); it must
    give what Iceberg's own parser gives, for a plain and a gzip-compressed metadata file."""
    gz = f"{SCHEMA}.gz"
    project.sql(f"DROP TABLE IF EXISTS {gz}")
    project.sql(
        f"CREATE TABLE {gz} (k INT) USING iceberg "
        "TBLPROPERTIES ('write.metadata.compression-codec'='gzip')"
    )
    project.sql(f"INSERT INTO {gz} VALUES (1)")
    read = session_metadata.heads(_spark(), [BASE, gz])
    assert read is not None
    (plain, _, _), (compressed, _, _) = read
    assert compressed.endswith(".gz.metadata.json")
    local = [session_metadata.metadata_json(_spark(), loc) for loc in (plain, compressed)]
    assert all(text is not None for text in local)
    monkeypatch.setattr(session_metadata, "_local_file_text", lambda location: None)
    by_iceberg = [session_metadata.metadata_json(_spark(), loc) for loc in (plain, compressed)]
    for location, mine, theirs in zip((plain, compressed), local, by_iceberg):
        assert theirs is not None and json.loads(mine) == json.loads(theirs)
        assert base_tables.parse_metadata(location, [(mine,)]) == base_tables.parse_metadata(
            location, [(theirs,)]
        )
    assert session_metadata._local_file_text("hdfs://namenode/warehouse/v1.metadata.json") is None


def test_state_columns_are_what_describe_lists(project: SmallProject) -> None:
    """The state's column types come from the catalog (no DESCRIBE): the same names and type
    strings as DESCRIBE TABLE, also for the nested columns of a MIN/MAX state."""
    from dbt.adapters.spark_ivm.compiler.runtime.executor import describe_columns

    for state in (STATE, f"{SCHEMA}.{MIN_MAX}__ivm_state"):
        by_sql = describe_columns(project.sql(f"DESCRIBE TABLE {state}"))
        assert session_metadata.columns(_spark(), state) == by_sql
    assert any("<" in dtype for _, dtype in by_sql), by_sql  # a nested type was compared
    assert session_metadata.columns(_spark(), f"{SCHEMA}.v") is None
