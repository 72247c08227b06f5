"""A base table written by another writer: the next refresh sees the commit.

Iceberg's session catalog caches a table's metadata (30 s after the last access), so a commit
made through another catalog (another process, a producer's own Spark) is invisible to a
cached entry. In session mode the refresh refreshes each base table's cached Iceberg table
object as it reads its head (`session_metadata._catalog_table`), and every later statement of
the session reads through that object; through thrift it runs `REFRESH TABLE` on every base
first (`Session.current_heads`). The other writer here is a second SparkSession of the process,
which has a catalog (and cache) of its own; the test's own reads go through dbt's session,
whose cached entry still shows the table before those commits until a refresh runs.

(Iceberg's `invalidateTable` called directly on the session catalog did not make this test
pass; refreshing the table object does.) Session method only (it needs the process's
pyspark); the thrift server's sessions run with `cache-enabled=false` (docs/reference.md,
*On a Spark cluster*).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from support.small_project import SmallProject

SCHEMA = "ivm_other_writer"
MODEL_SQL = f"select k, count(*) as n, sum(x) as s, max(x) as mx from {SCHEMA}.base group by k"


def _other_writer() -> Callable[[str], None]:
    """Statements run through a second SparkSession: its own catalog, its own cache."""
    from pyspark.sql import SparkSession

    other = SparkSession.builder.getOrCreate().newSession()
    return lambda statement: other.sql(statement).collect() and None


def test_commits_of_another_writer_reach_the_next_refresh(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    p = SmallProject(tmp_path_factory.mktemp("other_writer"), "other_writer", SCHEMA, "session")
    p.model("agg", MODEL_SQL)
    p.start_spark()
    p.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    p.sql(f"DROP TABLE IF EXISTS {SCHEMA}.base")
    p.sql(f"CREATE TABLE {SCHEMA}.base (k string, x int) USING iceberg")
    p.sql(f"INSERT INTO {SCHEMA}.base VALUES ('a', 1), ('a', 2), ('b', 3), (NULL, 4)")
    assert p.dbt("run").success
    assert p.bag(f"SELECT * FROM {SCHEMA}.agg") == p.bag(MODEL_SQL)

    write = _other_writer()
    for changes in (
        [
            f"INSERT INTO {SCHEMA}.base VALUES ('a', 10), ('c', 5)",
            f"DELETE FROM {SCHEMA}.base WHERE x = 3",
        ],
        [f"UPDATE {SCHEMA}.base SET x = x + 100 WHERE k = 'a'"],
    ):
        seen_before = p.bag(f"SELECT * FROM {SCHEMA}.base")
        for statement in changes:
            write(statement)
        # dbt's session still reads the table as its catalog cached it
        assert p.bag(f"SELECT * FROM {SCHEMA}.base") == seen_before, "the catalog did not cache"
        result = p.dbt("run")
        assert result.success
        message = result.result.results[0].message
        assert message.startswith("refreshed"), message
        # the refresh dropped the cached entry: the session now reads the other writer's rows
        assert p.bag(f"SELECT * FROM {SCHEMA}.base") != seen_before
        assert p.bag(f"SELECT * FROM {SCHEMA}.agg") == p.bag(MODEL_SQL)
