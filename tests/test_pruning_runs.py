"""Key pruning with more changed keys than it lists: the keys of a log are split into runs
(`pruning.key_runs`), and the refresh must still equal a fresh run of the SQL, for an inner
join and for the matched part of a LEFT JOIN.

The change is the usual OLTP shape: updates in one key range, deletes in another, inserts with
new keys above the largest, on both tables: 600 distinct keys in the log of dims and 900 in
that of facts (more than the 200 that are listed), against a fact table stored sorted by its
join key in 20 files.
"""

from __future__ import annotations

import pytest
from support.small_project import SmallProject

SCHEMA = "ivm_pruning_runs"
FACTS, DIMS = f"{SCHEMA}.facts", f"{SCHEMA}.dims"
MODELS = {
    "runs_inner": (
        "select d.g, count(*) as n, sum(f.v) as total, max(f.v) as top "
        f"from {FACTS} f join {DIMS} d on f.fk = d.k group by d.g"
    ),
    "runs_left": (
        "select d.k, d.g, count(f.v) as n, sum(f.v) as total "
        f"from {DIMS} d left join {FACTS} f on f.fk = d.k group by d.k, d.g"
    ),
}
CHANGES = (
    f"UPDATE {DIMS} SET g = concat(g, '*') WHERE k BETWEEN 1000 AND 1249",
    f"DELETE FROM {DIMS} WHERE k BETWEEN 5000 AND 5099",
    f"INSERT INTO {DIMS} SELECT id, concat('g', CAST(id % 7 AS STRING)) FROM range(100000, 100250)",
    f"UPDATE {FACTS} SET v = v + 1000 WHERE fk BETWEEN 3000 AND 3299",
    f"DELETE FROM {FACTS} WHERE fk BETWEEN 7000 AND 7049",
    f"INSERT INTO {FACTS} SELECT id % 100250, CAST(id % 97 AS INT) FROM range(100000, 100500)",
)


@pytest.fixture(scope="module")
def refreshed(tmp_path_factory: pytest.TempPathFactory) -> SmallProject:
    from pyspark.sql import SparkSession

    r = SmallProject(tmp_path_factory.mktemp("pruning_runs"), "pruning_runs", SCHEMA)
    for name, select in MODELS.items():
        r.model(name, select)
    assert r.dbt("debug").success
    spark = SparkSession.builder.getOrCreate()
    r.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    for name in (FACTS, DIMS):
        r.sql(f"DROP TABLE IF EXISTS {name}")
    # 20 files sorted by fk: a key range prunes most of them
    (
        spark.range(0, 20_000)
        .selectExpr("CAST(id % 10000 AS BIGINT) AS fk", "CAST(id % 89 AS INT) AS v")
        .repartitionByRange(20, "fk")
        .sortWithinPartitions("fk")
        .writeTo(FACTS)
        .using("iceberg")
        .create()
    )
    r.sql(
        f"CREATE TABLE {DIMS} USING iceberg AS "
        "SELECT id AS k, concat('g', CAST(id % 7 AS STRING)) AS g FROM range(0, 10000)"
    )
    build = r.dbt("run")
    assert build.success, build.exception
    for statement in CHANGES:
        r.sql(statement)
    refresh = r.dbt("run")
    assert refresh.success, refresh.exception
    r.messages = {res.node.name: str(res.message) for res in refresh.result.results}
    return r


@pytest.mark.parametrize("model", sorted(MODELS))
def test_refresh_with_runs_of_keys_equals_the_sql(model: str, refreshed: SmallProject) -> None:
    r = refreshed
    message = r.messages[model]
    assert message.startswith("refreshed"), message
    relation = r.bag(f"SELECT * FROM {SCHEMA}.{model}")
    expected = r.bag(MODELS[model])
    assert relation == expected, f"missing {expected - relation}, extra {relation - expected}"
