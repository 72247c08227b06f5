"""Window functions (issue 13, item 4): scripted changes that random rounds rarely isolate.

The differential families (`window_*`) change every partition each round; here each change
touches one partition in one way, and after every refresh the relation must equal a fresh
run of its SQL and the log must say how many partitions were recomputed:

* an update of a column only a window reads (the partition key and the row count stay):
  its partition is recomputed, although the change cancels in a count;
* an update that moves a row from one partition to another: both partitions;
* a NULL partition key is a partition like any other;
* a change the windows do not read (a column outside the SELECT): nothing recomputed;
* the last rows of a partition deleted: its rows disappear.
"""

from __future__ import annotations

import pytest
from support.adversarial import assert_equal_to_sql, run_messages
from support.small_project import SmallProject

from dbt.adapters.spark_ivm.compiler.errors import UnsupportedQueryError
from dbt.adapters.spark_ivm.compiler.frontend.analyze import analyze

SCHEMA = "ivm_windows"
BASE = f"{SCHEMA}.events"
MODEL = "ranked_events"
SELECT = (
    "select g, ts, v, "
    "row_number() over (partition by g order by ts, v) as rn, "
    "sum(v) over (partition by g order by ts, v rows between 1 preceding and current row) as s2, "
    "lag(v) over (partition by g order by ts, v) as prev_v "
    f"from {BASE} where v is distinct from 0"
)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> SmallProject:
    p = SmallProject(tmp_path_factory.mktemp("windows"), "windows", SCHEMA)
    p.model(MODEL, SELECT)
    p.start_spark()
    p.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    p.sql(f"DROP TABLE IF EXISTS {BASE}")
    p.sql(f"CREATE TABLE {BASE} (g string, ts int, v int, note string) USING iceberg")
    return p


def _refresh(p: SmallProject, context: str, partitions: int) -> None:
    message = run_messages(p)[MODEL]
    assert_equal_to_sql(p, f"{SCHEMA}.{MODEL}", SELECT, context)
    if partitions:
        assert f"{partitions} window partitions recomputed" in message, f"{context}: {message}"
    else:
        assert "recomputed" not in message, f"{context}: {message}"


def test_windows_follow_single_partition_changes(project: SmallProject):
    p = project
    rows = [
        "('a', 1, 10, 'x')", "('a', 2, 20, 'x')", "('a', 3, 30, 'x')",
        "('b', 1, 5, 'x')", "('b', 2, 6, 'x')",
        "(NULL, 1, 7, 'x')", "(NULL, 2, 8, 'x')",
    ]  # fmt: skip
    p.sql(f"INSERT INTO {BASE} VALUES {', '.join(rows)}")
    assert "built" in run_messages(p)[MODEL]
    assert_equal_to_sql(p, f"{SCHEMA}.{MODEL}", SELECT, "build")

    # Only the window-read value changes: 'a' keeps three rows (its count cancels).
    p.sql(f"UPDATE {BASE} SET v = 25 WHERE g = 'a' AND ts = 2")
    _refresh(p, "update of a value inside partition 'a'", 1)

    # Only the order changes: 'a''s rows are numbered again.
    p.sql(f"UPDATE {BASE} SET ts = 9 WHERE g = 'a' AND ts = 1")
    _refresh(p, "update of the order column inside partition 'a'", 1)

    # A row moves from 'b' to the NULL partition: both recomputed.
    p.sql(f"UPDATE {BASE} SET g = NULL WHERE g = 'b' AND ts = 2")
    _refresh(p, "a row moved from 'b' to NULL", 2)

    # A column the model does not read: no partition is recomputed.
    p.sql(f"UPDATE {BASE} SET note = 'y' WHERE g = 'a'")
    _refresh(p, "a column outside the SELECT", 0)

    # A row leaves through WHERE, another enters a new partition.
    p.sql(f"UPDATE {BASE} SET v = 0 WHERE g IS NULL AND ts = 1")
    p.sql(f"INSERT INTO {BASE} VALUES ('c', 1, 1, 'x')")
    _refresh(p, "a row filtered out of NULL, a new partition 'c'", 2)

    # Partition 'b' loses its last row.
    p.sql(f"DELETE FROM {BASE} WHERE g = 'b'")
    _refresh(p, "partition 'b' emptied", 1)


# -- analysis (no Spark): the partition key and the refusals --------------------------------------

SCHEMAS = {"db.t": [("k", "string"), ("j", "int"), ("x", "int")]}


@pytest.mark.parametrize(
    ("select", "keys"),
    [
        # the key is what every window shares: k (j is only in one window's PARTITION BY)
        (("select k, rank() over (partition by k, j order by x) r, "
         "sum(x) over (partition by k) s from db.t"), ["t.k"]),
        ("select k, lag(x) over (partition by j, k order by x) p from db.t", ["t.j", "t.k"]),
        # nothing shared, or no PARTITION BY: one partition, the whole result
        (("select rank() over (partition by k order by x) a, "
         "rank() over (partition by j order by x) b from db.t"), []),
        ("select x, row_number() over (order by x, k) n from db.t", []),
    ],
)  # fmt: skip
def test_the_partition_key_is_the_partition_by_every_window_shares(select: str, keys: list[str]):
    query = analyze(select, "m", SCHEMAS, "db")
    assert [k.sql("spark") for k in query.window_keys or []] == keys
    assert query.aggregates == []  # sum(x) OVER is a window, not an aggregate
    assert bool(query.notes) == (not keys), query.notes  # the log says: whole result


@pytest.mark.parametrize(
    ("select", "construct"),
    [
        ("select k, count(*) n, rank() over (order by count(*)) r from db.t group by k",
         "a window function together with GROUP BY"),
        ("select distinct k, rank() over (partition by k order by x) r from db.t",
         "SELECT DISTINCT together with a window function"),
        ("select k, rank() over (order by sum(x)) r from db.t",
         "an aggregate or window inside a window function"),
    ],
)  # fmt: skip
def test_windows_no_rule_keeps_exact_are_refused_by_name(select: str, construct: str):
    with pytest.raises(UnsupportedQueryError, match=construct):
        analyze(select, "m", SCHEMAS, "db")
