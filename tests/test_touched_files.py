"""A merge-on-read base table's version diff pairs only the data files the window touched
(`capture/touched_files.py`), and in session mode reads only those files
(`capture/merge_on_read.py`, `staged_reads.py`): exact after UPDATE/DELETE/MERGE writing
delete files, a compaction and a rewrite of the delete files in one window, a column added
and a column widened since the files were written, an identity-partitioned table; whole
versions where the window's manifests cannot bound the touched files."""

from __future__ import annotations

import re

import pytest
from support.adversarial import assert_equal_to_sql, run_messages
from support.small_project import SmallProject

from dbt.adapters.spark_ivm import session_metadata, staged_reads
from dbt.adapters.spark_ivm.compiler.capture import touched_files
from dbt.adapters.spark_ivm.compiler.errors import Refusal
from dbt.adapters.spark_ivm.compiler.runtime import file_reads
from dbt.adapters.spark_ivm.compiler.sql.templates import sql

SCHEMA = "ivm_touched"
BASE = f"{SCHEMA}.base"
MODEL = "by_key"
SELECT = f"select k, count(*) as n, sum(x) as s, max(x) as mx from {BASE} group by k"
WIDE = f"{SCHEMA}.wide"
WIDE_MODEL = "wide_by_part"
WIDE_SELECT = f"select p, y, count(*) as n, sum(x) as s, min(x) as lo from {WIDE} group by p, y"
CALL = "CALL system"
MOR = (
    "'format-version'='2', 'write.delete.mode'='merge-on-read', "
    "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read'"
)


def test_the_side_predicates_name_the_files_and_ranges() -> None:
    rows = [
        (1, 0, "f/new.parquet", None, None, "PARQUET"),
        (2, 0, "f/gone.parquet", None, None, "PARQUET"),
        (1, 1, "f/del-1.parquet", "f/a.parquet", "f/a.parquet", "PARQUET"),
        (2, 1, "f/del-0.parquet", "f/b.parquet", "f/c.parquet", "PARQUET"),
    ]
    found = touched_files.touched(rows, ["k", "x"])
    assert isinstance(found, touched_files.Touched)
    new = sql(found.side("v", new=True))
    old = sql(found.side("v", new=False))
    assert "'f/new.parquet'" in new and "'f/gone.parquet'" not in new
    assert "'f/gone.parquet'" in old and "'f/new.parquet'" not in old
    for side in (new, old):  # deletes added or removed in the window: both sides
        assert "BETWEEN 'f/a.parquet' AND 'f/a.parquet'" in side
        assert "BETWEEN 'f/b.parquet' AND 'f/c.parquet'" in side


@pytest.mark.parametrize(
    ("rows", "columns", "why"),
    [
        ([(1, 2, "f/eq.parquet", None, None, "PARQUET")], ["k"], "equality delete"),
        ([(1, 1, "f/del.parquet", None, "f/a", "PARQUET")], ["k"], "no bounds"),
        ([(1, 0, "f/new.parquet", None, None, "PARQUET")], ["k", "_FILE"], "column named _file"),
    ],
)
def test_whole_versions_where_the_files_are_not_bounded(rows, columns, why) -> None:
    found = touched_files.touched(rows, columns)
    assert isinstance(found, Refusal) and why in str(found)


@pytest.fixture(autouse=True)
def _positions_of_small_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tables' files are a few KB: read their deletes' positions all the same (by
    default a version diff reads them, `file_reads.min_touched_bytes`)."""
    monkeypatch.setenv(file_reads.MIN_TOUCHED_BYTES_ENV, "0")


def _fill_files(p: SmallProject, table: str, *extra: str) -> None:
    """Four inserts into `table` (k string, x int): four data files, keys k0..k4 and NULL."""
    for part in range(4):
        values = ", ".join(f"('k{i % 5}', {part * 100 + i})" for i in range(20))
        p.sql(f"INSERT INTO {table} VALUES {', '.join([values, f'(NULL, {part})', *extra])}")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> SmallProject:
    p = SmallProject(tmp_path_factory.mktemp("touched"), "touched", SCHEMA)
    p.model(MODEL, SELECT)
    p.model(WIDE_MODEL, WIDE_SELECT)
    p.start_spark()
    p.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    p.sql(f"DROP TABLE IF EXISTS {BASE}")
    p.sql(f"CREATE TABLE {BASE} (k string, x int) USING iceberg TBLPROPERTIES ({MOR})")
    # several data files, so that a window touches some and not others
    _fill_files(p, BASE, "('k1', NULL)")
    # identity-partitioned; `y` and the widening of `x` come later (files written before them)
    p.sql(f"DROP TABLE IF EXISTS {WIDE}")
    p.sql(
        f"CREATE TABLE {WIDE} (p string, x int) USING iceberg PARTITIONED BY (p) "
        f"TBLPROPERTIES ({MOR})"
    )
    for part in range(3):
        values = ", ".join(f"('p{i % 3}', {part * 100 + i})" for i in range(12))
        p.sql(f"INSERT INTO {WIDE} VALUES {values}, (NULL, {part})")
    p.sql(f"ALTER TABLE {WIDE} ADD COLUMN y string")
    p.sql(f"ALTER TABLE {WIDE} ALTER COLUMN x TYPE bigint")
    p.sql(f"INSERT INTO {WIDE} VALUES ('p0', 50, 'z')")  # the build's snapshot knows `y`
    assert p.dbt("run").success
    assert_equal_to_sql(p, f"{SCHEMA}.{MODEL}", SELECT, "build")
    assert_equal_to_sql(p, f"{SCHEMA}.{WIDE_MODEL}", WIDE_SELECT, "build")
    return p


def _refresh(p: SmallProject, model: str = MODEL, select: str = SELECT) -> str:
    message = run_messages(p)[model]
    assert_equal_to_sql(p, f"{SCHEMA}.{model}", select, message)
    return message


def _read_fewer_files(message: str) -> None:
    """The session method read each side through some of the table's files, not all: by
    the positions its delete files name (`position_deletes.py`), else by the version diff
    of both versions' touched files."""
    if "position deletes of" in message:
        found = re.findall(r"(added|removed|old|new) (\d+) of (\d+)", message)
        assert found, message
        assert all(int(read) < int(planned) for _, read, planned in found), message
        assert any(part == "old" and int(read) > 0 for part, read, _ in found), message
        return
    found = re.search(r"read (\d+) of (\d+) files new, (\d+) of (\d+) old", message)
    assert found, message
    new_read, new_all, old_read, old_all = (int(g) for g in found.groups())
    assert 0 < new_read < new_all and 0 < old_read < old_all, message


def test_deletes_updates_and_merges_pair_only_the_touched_files(
    project: SmallProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = project
    p.sql(f"DELETE FROM {BASE} WHERE x = 105")
    p.sql(f"UPDATE {BASE} SET x = x + 1000 WHERE x BETWEEN 200 AND 203")
    p.sql(
        f"MERGE INTO {BASE} t USING (SELECT 'k2' AS k, 7 AS x UNION ALL SELECT 'k9', 8) s "
        "ON t.x = s.x WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *"
    )
    message = _refresh(p)
    assert "position deletes of" in message and "touched files" in message, message
    _read_fewer_files(message)
    # a row inserted and deleted in one window, and a NULL key
    p.sql(f"INSERT INTO {BASE} VALUES ('k7', 1), (NULL, 2)")
    p.sql(f"DELETE FROM {BASE} WHERE k = 'k7' OR x = 2")
    assert "position deletes of" in _refresh(p)
    # by default deletes in a few small files are read by the version diff
    monkeypatch.delenv(file_reads.MIN_TOUCHED_BYTES_ENV)
    p.sql(f"DELETE FROM {BASE} WHERE x = 6")
    assert "version diff of" in _refresh(p)


def test_a_compaction_and_rewritten_deletes_in_the_window(project: SmallProject) -> None:
    p = project
    p.sql(f"DELETE FROM {BASE} WHERE x IN (3, 303)")
    p.sql(
        f"{CALL}.rewrite_position_delete_files(table => '{BASE}', options => map('rewrite-all', 'true'))"
    )
    p.sql(f"UPDATE {BASE} SET k = 'k8' WHERE x = 4")
    p.sql(f"{CALL}.rewrite_data_files(table => '{BASE}', options => map('rewrite-all', 'true'))")
    p.sql(f"DELETE FROM {BASE} WHERE x = 10")
    assert "touched files" in _refresh(p)
    # and a window with nothing but a compaction
    p.sql(f"{CALL}.rewrite_data_files(table => '{BASE}', options => map('rewrite-all', 'true'))")
    _refresh(p)


def test_files_written_before_a_column_was_added_or_widened(project: SmallProject) -> None:
    """Old files lack `y` and hold `x` as int: the file read projects them by field id, as
    the table's own scan does (a rename of a read column is refused before, see
    test_adversarial_events)."""
    p = project
    p.sql(f"UPDATE {WIDE} SET y = 'a' WHERE x IN (1, 102)")
    p.sql(f"DELETE FROM {WIDE} WHERE x = 4 OR p IS NULL AND x = 1")
    p.sql(f"INSERT INTO {WIDE} VALUES ('p1', 7, 'b'), (NULL, NULL, NULL)")
    _read_fewer_files(_refresh(p, WIDE_MODEL, WIDE_SELECT))
    p.sql(f"UPDATE {WIDE} SET x = x + 3000000000 WHERE x IN (5, 205)")
    p.sql(
        f"MERGE INTO {WIDE} t USING (SELECT 'p2' AS p, 8 AS x) s ON t.x = s.x AND t.p = s.p "
        "WHEN MATCHED THEN UPDATE SET y = 'm' WHEN NOT MATCHED THEN INSERT (p, x) VALUES (p, x)"
    )
    _read_fewer_files(_refresh(p, WIDE_MODEL, WIDE_SELECT))


def test_the_driver_reads_the_window_files_sql_reads(project: SmallProject) -> None:
    """Session method: the window's files come from the snapshots' manifests in the driver
    (`session_metadata.window_files`), the same rows as `all_entries` in SQL, delete files
    added and removed and their path bounds included."""
    from pyspark.sql import SparkSession  # the session method: this process's Spark

    p = project
    p.sql(f"DELETE FROM {BASE} WHERE x IN (11, 311)")
    p.sql(
        f"{CALL}.rewrite_position_delete_files(table => '{BASE}', options => map('rewrite-all', 'true'))"
    )
    p.sql(f"UPDATE {BASE} SET x = x + 1 WHERE x = 12")
    ids = [
        int(r[0]) for r in p.sql(f"SELECT snapshot_id FROM {BASE}.snapshots ORDER BY committed_at")
    ]
    window = ids[-3:]
    spark = SparkSession.builder.getOrCreate()
    driver = session_metadata.window_files(spark, BASE, window, touched_files.DELETE_FILE_PATH_ID)
    assert driver is not None
    in_sql = p.sql(touched_files.entries_sql(BASE, window))
    assert {tuple(r) for r in driver} == {tuple(r) for r in in_sql}
    assert {(r[0], r[1]) for r in driver} >= {(1, 0), (1, 1), (2, 1)}, driver
    _refresh(p)


def test_without_file_reads_both_versions_are_scanned_and_paired(
    project: SmallProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the files cannot be staged (a thrift connection, or any failure of the JVM
    read), the touched files' rows are filtered by `_file` out of both whole versions in
    SQL (`version_diff.log_select` with `Touched.side`): the same log."""
    p = project
    monkeypatch.setattr(staged_reads, "stage", lambda *args: None)
    p.sql(f"DELETE FROM {BASE} WHERE x = 13")
    p.sql(f"UPDATE {BASE} SET k = NULL WHERE x IN (14, 214)")
    p.sql(f"INSERT INTO {BASE} VALUES ('k3', 15), ('k3', 15)")
    message = _refresh(p)
    assert "touched files" in message and "files new" not in message, message


def test_deletion_vectors_pair_only_the_files_they_name(
    project: SmallProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A format 3 table's UPDATE and DELETE write deletion vectors, which carry no path
    bounds but name their data file: the version diff still pairs only the touched files,
    read staged (session method) and filtered in SQL alike."""
    p = project
    table, model = f"{SCHEMA}.dv", "dv_by_key"
    select = f"select k, count(*) as n, sum(x) as s from {table} group by k"
    p.sql(f"DROP TABLE IF EXISTS {table}")
    p.sql(f"CREATE TABLE {table} (k string, x int) USING iceberg TBLPROPERTIES ({MOR})")
    p.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('format-version' = '3')")
    _fill_files(p, table)
    p.model(model, select)
    assert p.dbt("run", "--select", model).success
    assert_equal_to_sql(p, f"{SCHEMA}.{model}", select, "build")
    p.sql(f"UPDATE {table} SET x = x + 1000 WHERE x BETWEEN 200 AND 203")
    p.sql(f"DELETE FROM {table} WHERE x = 105")
    (formats,) = p.sql(f"SELECT collect_set(file_format) FROM {table}.delete_files")[0]
    assert list(formats) == ["PUFFIN"], formats  # deletion vectors, not position files
    message = _refresh(p, model, select)
    assert "touched files" in message, message
    _read_fewer_files(message)
    monkeypatch.setattr(staged_reads, "stage", lambda *args: None)
    p.sql(f"UPDATE {table} SET k = NULL WHERE x IN (14, 314)")
    message = _refresh(p, model, select)
    assert "touched files" in message and "files new" not in message, message


def test_rows_come_back_when_a_delete_file_is_removed(project: SmallProject) -> None:
    """A commit that removes a position delete file without another holding its positions
    makes its rows visible again: the position read finds them at the new version
    (`position_deletes.py`, P(R) - P(A)), beside a DELETE in the same window."""
    from pyspark.sql import SparkSession  # the session method: this process's Spark

    p = project
    table, model = f"{SCHEMA}.back", "back_by_key"
    select = f"select k, count(*) as n, sum(x) as s from {table} group by k"
    p.sql(f"DROP TABLE IF EXISTS {table}")
    p.sql(f"CREATE TABLE {table} (k string, x int) USING iceberg TBLPROPERTIES ({MOR})")
    _fill_files(p, table)
    p.model(model, select)
    assert p.dbt("run", "--select", model).success
    gone = f"SELECT count(*) FROM {table} WHERE x IN (1, 2, 101)"
    (before,) = p.sql(gone)[0]
    p.sql(f"DELETE FROM {table} WHERE x IN (1, 2, 101)")
    _refresh(p, model, select)
    spark = SparkSession.builder.getOrCreate()
    iceberg = session_metadata.iceberg_table(spark, table)
    deletes = iceberg.currentSnapshot().addedDeleteFiles(iceberg.io()).iterator()
    undo = iceberg.newRowDelta()
    while deletes.hasNext():
        undo = undo.removeDeletes(deletes.next())
    undo.commit()
    p.sql(f"DELETE FROM {table} WHERE x = 3")
    assert p.sql(gone)[0][0] == before > 0  # the deleted rows are back
    message = _refresh(p, model, select)
    assert "position deletes of" in message and ", new " in message, message  # rows back
