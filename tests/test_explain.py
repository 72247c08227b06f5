"""`dbt run-operation ivm_explain` (issue 13, item 7): a model's dataflow in words.

User-visible outcomes: for a built model it prints the state table with its row count, each
input's reflected snapshot and whether a change waits, the joins with the rule that
maintains each (inner: sum over inputs; outer: padding), the aggregate's rule per call, the
key pruning of delta terms, and whether an auxiliary state is kept or possible; sub-query
states each with their own section; a refused SELECT is named as `dbt run` names it; an
unknown or unbuilt model is a clear error. Explaining changes nothing: no table gets a
commit and the relation still equals its SQL.
"""

from __future__ import annotations

import json

import pytest
from support.small_project import SmallProject

SCHEMA = "ivm_explain"
MODELS = {
    "by_region": (
        "select c.region, count(*) as n, sum(o.amount) as s, max(o.amount) as m "
        f"from {SCHEMA}.orders o join {SCHEMA}.customers c on o.cust = c.cid "
        "group by c.region having count(*) > 0"
    ),
    "with_left": (
        "select c.cid, o.oid from "
        f"{SCHEMA}.customers c left join {SCHEMA}.orders o on o.cust = c.cid"
    ),
    "nested": (
        "select t.big, count(*) as custs from (select cust, sum(amount) > 10 as big "
        f"from {SCHEMA}.orders group by cust) t group by t.big"
    ),
    "with_aux": (
        "{{ config(ivm_aux_states='always') }}\n"
        "select c.region, count(*) as n, sum(o.qty) as q "
        f"from {SCHEMA}.orders o join {SCHEMA}.customers c on o.cust = c.cid group by c.region"
    ),
    # over a dbt view model and a parquet table (read through its snapshot-diff copy)
    "over_view": (
        "select s.cust, count(*) as n from {{ ref('stg_orders') }} s "
        f"join {SCHEMA}.flags_pq f on f.cid = s.cust group by s.cust"
    ),
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> SmallProject:
    p = SmallProject(tmp_path_factory.mktemp("explain"), "explain_project", SCHEMA)
    p.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    for name in ("orders", "customers"):
        p.sql(f"DROP TABLE IF EXISTS {SCHEMA}.{name}")
    p.sql(
        f"CREATE TABLE {SCHEMA}.orders (oid INT, cust INT, amount DECIMAL(10,2), qty BIGINT) "
        "USING iceberg"
    )
    p.sql(f"CREATE TABLE {SCHEMA}.customers (cid INT, region STRING) USING iceberg")
    p.sql(
        f"INSERT INTO {SCHEMA}.orders VALUES (1, 1, 5.00, 1), (2, 1, 7.50, 2), (3, 2, NULL, 3), "
        "(4, NULL, 1.00, 4), (5, 3, 20.00, NULL)"
    )
    p.sql(f"INSERT INTO {SCHEMA}.customers VALUES (1, 'north'), (2, NULL), (3, 'south')")
    p.sql(f"DROP TABLE IF EXISTS {SCHEMA}.flags_pq")
    p.sql(f"CREATE TABLE {SCHEMA}.flags_pq (cid INT, flag BOOLEAN) USING parquet")
    p.sql(f"INSERT INTO {SCHEMA}.flags_pq VALUES (1, true), (3, NULL)")
    for name, select in MODELS.items():
        p.model(name, select)
    (p.root / "models" / "stg_orders.sql").write_text(
        "{{ config(materialized='view') }}\n"
        f"select oid, cust, amount from {SCHEMA}.orders where amount is not null"
    )
    p.run()
    return p


def explain(project: SmallProject, args: str) -> tuple[bool, list[str]]:
    """Run the operation; (success, the lines it printed)."""
    return project.operation("ivm_explain", args)


def snapshots(project: SmallProject, relation: str) -> int:
    return project.sql(f"SELECT count(*) FROM {relation}.snapshots")[0][0]


def test_a_built_aggregate_over_a_join(project: SmallProject) -> None:
    ok, lines = explain(project, "{model: by_region}")
    assert ok, lines
    text = "\n".join(lines)
    assert lines[0].startswith(f"ivm model 'by_region' ({SCHEMA}.by_region): a view"), text
    # 3 groups: north, NULL (customer 2), south
    assert f"state {SCHEMA}.by_region__ivm_state: 3 state rows" in text, text
    assert f"input {SCHEMA}.orders: snapshot" in text and "current (no change waiting)" in text
    assert "join: INNER JOIN c ON" in text and "sum over inputs" in text, text
    assert "operator: aggregate by c.region" in text, text
    assert "MAX(o.amount): extremes" in text and "SUM(o.amount): sums" in text, text
    assert "having: COUNT(*) > 0" in text, text
    assert f"key pruning: a change of {SCHEMA}.orders reads c only at c.cid" in text, text
    assert "auxiliary state: not kept (ivm_aux_states=never); possible: aux state A(o.cust)" in text


def test_a_waiting_change_is_shown_and_explain_changes_nothing(project: SmallProject) -> None:
    before = {r: snapshots(project, f"{SCHEMA}.{r}") for r in ("by_region__ivm_state", "orders")}
    project.sql(f"INSERT INTO {SCHEMA}.customers VALUES (4, 'west')")
    ok, lines = explain(project, "{model: by_region}")
    assert ok, lines
    text = "\n".join(lines)
    assert f"input {SCHEMA}.customers: snapshot" in text and "changed since the last run" in text
    # the state's runs, and what the next would do with both estimates (`cost.py`)
    assert "runs (UTC, oldest first):" in text and " build " in text, text
    assert "next run: refresh (ivm_refresh=incremental): the change's files are" in text, text
    assert f"of {SCHEMA}.customers's bytes; est. refresh" in text, text
    after = {r: snapshots(project, f"{SCHEMA}.{r}") for r in before}
    assert after == before
    project.run()
    project.check_models(list(MODELS))


def test_outer_join_nested_and_aux_states(project: SmallProject) -> None:
    ok, lines = explain(project, "{model: with_left}")
    assert ok and "outer padding" in "\n".join(lines), lines
    assert "operator: bag" in "\n".join(lines), lines
    ok, lines = explain(project, "{model: nested}")
    text = "\n".join(lines)
    assert ok and f"sub-query state s0 {SCHEMA}.nested__ivm_s0__ivm_state: 4 state rows" in text, (
        text
    )
    assert "state (over its sub-query states)" in text, text
    # the dataflow first: the states in the order a run maintains them
    flow = [line.strip() for line in lines[1:4]]
    assert flow == [
        "dataflow of 'nested': 2 states, maintained in this order",
        f"1. sub-query state {SCHEMA}.nested__ivm_s0",
        f"2. the model's state {SCHEMA}.nested, reads 1",
    ], text
    ok, lines = explain(project, "{model: with_aux}")
    text = "\n".join(lines)
    assert ok and f"auxiliary state (the facts pre-aggregated by join key) {SCHEMA}." in text
    assert f"1. auxiliary state {SCHEMA}.with_aux__ivm_aux" in text, text
    assert "state (over the auxiliary state and the dimension)" in text, text
    ok, lines = explain(project, "{model: over_view}")
    text = "\n".join(lines)
    assert ok and f"reads view {SCHEMA}.stg_orders through its query" in text, text
    assert f"reads {SCHEMA}.flags_pq (no snapshots) through its copy" in text, text


def test_refusals_and_errors(project: SmallProject) -> None:
    generated = (
        "'{model: by_region, sql: \"select o.oid, e from "
        f"{SCHEMA}.orders o lateral view explode(array(o.oid, 1)) t as e\"}}'"
    )
    ok, lines = explain(project, generated.strip("'"))
    assert ok, lines
    assert any(line.strip().startswith("refused: LATERAL VIEW") for line in lines), lines
    windowed = (
        '{model: by_region, sql: "select o.oid, rank() over (partition by o.cust '
        f'order by o.oid) as r from {SCHEMA}.orders o"}}'
    )
    ok, lines = explain(project, windowed)
    text = "\n".join(lines)
    assert ok and "operator: window, partitions by o.cust" in text, text
    assert "RANK() OVER (PARTITION BY o.cust ORDER BY o.oid)" in text, text
    unioned = (
        f'{{model: by_region, sql: "select o.oid from {SCHEMA}.orders o union all '
        f'select c.cid from {SCHEMA}.customers c"}}'
    )
    ok, lines = explain(project, unioned)
    text = "\n".join(lines)
    assert ok and "operator: UNION ALL of 2 branches" in text, text
    ok, lines = explain(project, "{model: no_such_model}")
    assert not ok
    project.model("never_run", f"select cid from {SCHEMA}.customers")
    ok, _ = explain(project, "{model: never_run}")
    assert not ok


def test_a_versioned_model_is_explained_by_version(project: SmallProject) -> None:
    """`{model: name}` explains a versioned model's latest version, `{model: name.vN}` that
    version; each is named `name.vN`, as `dbt run` names it."""
    p = project
    versions = {
        "version": 2,
        "models": [{"name": "regional", "latest_version": 2, "versions": [{"v": 1}, {"v": 2}]}],
    }
    (p.root / "models" / "regional.yml").write_text(json.dumps(versions))
    p.model("regional_v1", f"select region, count(*) as n from {SCHEMA}.customers group by region")
    p.model("regional_v2", f"select cid, region from {SCHEMA}.customers where cid > 1")
    try:
        p.run("--select", "regional")
        ok, lines = explain(p, "{model: regional}")
        assert ok and lines[0].startswith(f"ivm model 'regional.v2' ({SCHEMA}.regional_v2)"), lines
        ok, lines = explain(p, "{model: regional.v1}")
        assert ok and lines[0].startswith(f"ivm model 'regional.v1' ({SCHEMA}.regional_v1)"), lines
        assert any("operator: aggregate by" in line for line in lines), lines
        ok, _ = explain(p, "{model: regional.v3}")
        assert not ok
    finally:
        for name in ("regional.yml", "regional_v1.sql", "regional_v2.sql"):
            (p.root / "models" / name).unlink()
