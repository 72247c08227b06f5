"""ivm models over base relations that keep no snapshots (issue 12, item 4): a parquet table,
a dbt `table` model written as parquet and replaced by every `dbt run`, a plain CSV seed.

User-visible outcomes: the model builds and then refreshes incrementally (never rebuilt
because its base is not Iceberg) while the base changes, NULLs, duplicates and a double
that turns from 0.0 to -0.0 included; after every run the relation equals its SQL run now
(bags, and `dbt test` with `ivm_consistent`); the log names the snapshot diff and what it
read; a run with no change merges nothing; a column added to the base rebuilds the model and
says why; a failure after the copy was brought level and before the model's commit leaves
the relation as it was, and the next run is exact.
"""

from __future__ import annotations

import json
import os
import random

import pytest
from support.small_project import SmallProject

from dbt.adapters.spark_ivm.compiler.runtime.failpoints import FAIL_ENV

SCHEMA = "ivm_snapdiff"

MODELS = {
    # a parquet table joined with an Iceberg table
    "over_parquet": (
        "{{ config(materialized='ivm') }}\n"
        "select p.k, i.tag, count(*) as n, sum(p.x) as sx, min(p.d) as md, count(p.d) as nd "
        f"from {SCHEMA}.plain p left join {SCHEMA}.ice i on i.k = p.k group by p.k, i.tag"
    ),
    # a double copied exactly: 0.0 -> -0.0 must reach the relation
    "parquet_rows": (
        "{{ config(materialized='ivm') }}\n"
        f"select distinct k, cast(d as string) as d_text from {SCHEMA}.plain"
    ),
    # a dbt table model in parquet, dropped and re-created by every run
    "rebuilt_table": (
        "{{ config(materialized='table', file_format='parquet') }}\n"
        f"select k, x * 2 as x2 from {SCHEMA}.plain where x is not null"
    ),
    "over_rebuilt_table": (
        "{{ config(materialized='ivm') }}\n"
        "select k, count(*) as n, sum(x2) as s from {{ ref('rebuilt_table') }} group by k"
    ),
    "over_seed": (
        "{{ config(materialized='ivm') }}\n"
        "select s.region, count(*) as n, max(s.score) as top from {{ ref('plain_seed') }} s "
        "group by s.region"
    ),
}
IVM_MODELS = ("over_parquet", "parquet_rows", "over_rebuilt_table", "over_seed")


def _value(rng: random.Random, low: int, high: int) -> str:
    return "NULL" if rng.random() < 0.15 else str(rng.randint(low, high))


def _plain_rows(rng: random.Random, n: int) -> list[str]:
    rows = []
    for _ in range(n):
        k = rng.choice(["'a'", "'b'", "'c'", "NULL"])
        d = rng.choice(["0.0D", "1.5D", "-2.25D", "NULL"])
        rows.append(f"({k}, {_value(rng, -5, 9)}, {d})")
    return rows


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> SmallProject:
    p = SmallProject(tmp_path_factory.mktemp("snapdiff"), "snapdiff", SCHEMA)
    p.start_spark()
    p.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    for name in ("plain", "ice"):
        p.sql(f"DROP TABLE IF EXISTS {SCHEMA}.{name}")
    p.sql(f"CREATE TABLE {SCHEMA}.plain (k string, x int, d double) USING parquet")
    rows = _plain_rows(random.Random(1), 12)
    p.sql(f"INSERT INTO {SCHEMA}.plain VALUES {', '.join(rows + rows[:2])}")
    p.sql(f"CREATE TABLE {SCHEMA}.ice (k string, tag string) USING iceberg")
    p.sql(f"INSERT INTO {SCHEMA}.ice VALUES ('a', 't1'), ('b', NULL), (NULL, 'tn'), ('a', 't2')")
    (p.root / "seeds").mkdir(exist_ok=True)
    (p.root / "seeds" / "plain_seed.csv").write_text(
        "id,region,score\n1,north,3\n2,north,\n3,,7\n4,south,1\n5,south,1\n"
    )
    for name, text in MODELS.items():
        (p.root / "models" / f"{name}.sql").write_text(text)
    tests = {
        "version": 2,
        "models": [{"name": m, "data_tests": ["ivm_consistent"]} for m in IVM_MODELS],
    }
    (p.root / "models" / "consistency.yml").write_text(json.dumps(tests))
    assert p.dbt("seed", "--full-refresh").success
    return p


def _rewrite(p: SmallProject, select: str) -> None:
    """Replace the parquet table's rows by `select` over it (parquet takes no DELETE or
    UPDATE, and Spark refuses to overwrite a table it reads in the same statement)."""
    # (an Iceberg scratch table: a dropped parquet table leaves its folder behind here)
    p.sql(f"DROP TABLE IF EXISTS {SCHEMA}.plain_next PURGE")
    p.sql(f"CREATE TABLE {SCHEMA}.plain_next USING iceberg AS {select}")
    p.sql(f"INSERT OVERWRITE {SCHEMA}.plain SELECT * FROM {SCHEMA}.plain_next")
    p.sql(f"DROP TABLE {SCHEMA}.plain_next PURGE")


def _change(p: SmallProject, rng: random.Random) -> None:
    p.sql(f"INSERT INTO {SCHEMA}.plain VALUES {', '.join(_plain_rows(rng, rng.randint(1, 4)))}")
    # rows deleted and updated, as a producer's rewrite (or dbt's `table` materialization) does
    _rewrite(
        p,
        f"SELECT k, CASE WHEN k = 'b' THEN x + 1 ELSE x END AS x, d FROM {SCHEMA}.plain "
        f"WHERE coalesce(x, 0) <> {rng.randint(-5, 9)}",
    )
    p.sql(f"UPDATE {SCHEMA}.ice SET tag = 't{rng.randint(1, 3)}' WHERE k = 'a'")
    p.sql(
        f"INSERT INTO {SCHEMA}.plain_seed VALUES ({rng.randint(6, 99)}, 'south', {_value(rng, 0, 9)})"
    )


def test_models_over_relations_without_snapshots_refresh_exactly(project: SmallProject) -> None:
    p = project
    messages = p.run()
    for model in IVM_MODELS:
        assert messages[model].startswith("built (first run)"), messages
    p.check_models(IVM_MODELS)
    rng = random.Random(4)
    for _ in range(3):
        _change(p, rng)
        messages = p.run()
        for model in IVM_MODELS:
            assert messages[model].startswith("refreshed"), messages[model]
        assert "__ivm_copy__ivm_snapdiff__plain" in messages["over_parquet"], messages
        assert "__ivm_copy__ivm_snapdiff__rebuilt_table" in messages["over_rebuilt_table"]
        p.check_models(IVM_MODELS)
    # 0.0 -> -0.0 in the parquet table: a change the copy must see
    p.sql(f"INSERT INTO {SCHEMA}.plain VALUES ('z', 1, 0.0D), ('z', NULL, 0.0D)")
    messages = p.run()
    assert "0.0" in {r[1] for r in p.sql(f"SELECT * FROM {SCHEMA}.parquet_rows")}
    _rewrite(
        p,
        f"SELECT k, x, CASE WHEN d = 0 THEN CAST('-0.0' AS DOUBLE) ELSE d END AS d "
        f"FROM {SCHEMA}.plain",
    )
    texts = {r[0] for r in p.sql(f"SELECT CAST(d AS STRING) FROM {SCHEMA}.plain")}
    assert "-0.0" in texts and "0.0" not in texts, texts
    messages = p.run()
    assert messages["parquet_rows"].startswith("refreshed"), messages
    got = {r[1] for r in p.sql(f"SELECT * FROM {SCHEMA}.parquet_rows")}
    assert "-0.0" in got and "0.0" not in got, got
    p.check_models(IVM_MODELS)
    # nothing changed since: no MERGE (the rebuilt table model is re-created with the same rows)
    messages = p.run()
    for model in IVM_MODELS:
        assert messages[model].startswith("no MERGE"), messages[model]


def test_a_failure_after_the_copy_leaves_the_relation_and_the_next_run_exact(
    project: SmallProject,
) -> None:
    p = project
    p.run("--select", "over_parquet")
    before = p.bag(f"SELECT * FROM {SCHEMA}.over_parquet")
    _change(p, random.Random(9))
    os.environ[FAIL_ENV] = "delta"
    try:
        result = p.dbt("run", "--select", "over_parquet")
    finally:
        os.environ.pop(FAIL_ENV)
    assert not result.success
    assert p.bag(f"SELECT * FROM {SCHEMA}.over_parquet") == before
    messages = p.run("--select", "over_parquet")
    assert messages["over_parquet"].startswith("refreshed"), messages
    p.check_models(("over_parquet",))


def test_a_refused_model_over_a_parquet_table_leaves_no_copy(project: SmallProject) -> None:
    p = project
    (p.root / "models" / "ranked.sql").write_text(
        "{{ config(materialized='ivm') }}\n"
        f"select k, e from {SCHEMA}.plain lateral view explode(array(x, 1)) t as e"
    )
    try:
        result = p.dbt("run", "--select", "ranked")
        assert not result.success
        message = " ".join(str(r.message) for r in result.result.results)
        assert "LATERAL VIEW" in message, message
        names = {r[1] for r in p.sql(f"SHOW TABLES IN {SCHEMA}")}
        assert not any(n.startswith("ranked") for n in names), names
    finally:
        (p.root / "models" / "ranked.sql").unlink()


def test_a_column_added_to_the_base_rebuilds_and_says_why(project: SmallProject) -> None:
    p = project
    p.run("--select", "over_parquet")
    p.sql(f"ALTER TABLE {SCHEMA}.plain ADD COLUMNS (extra string)")
    messages = p.run("--select", "over_parquet")
    message = messages["over_parquet"]
    assert message.startswith("built") and "dropped and re-created" in message, message
    p.check_models(("over_parquet",))
