"""An ivm model over dbt `view` models, views over views, ephemeral models and a hand-made
view (issue 12, item 2): each view is read through its query, so the model is maintained
over the tables underneath.

User-visible outcomes: the models build and then refresh incrementally (no rebuild) while the
base tables change under the views, NULLs and duplicates included; after every run each
relation equals its SQL run now (bags, and `dbt test` with `ivm_consistent`), an ivm model over another
ivm model included (it reads the upstream's state table through the upstream's view; run
alone over an upstream that is behind its own base tables, it says so and names them); a changed view
definition rebuilds the models that read it and the run's message names the view; a view
over a parquet table is read down to that table, which is captured by snapshot diff. Refused,
naming what and creating nothing: an Iceberg view that names a table without its database (Spark 3.5 resolves that name in the reader's current database,
not the view's: a model over it would have no one right answer).
"""

from __future__ import annotations

import json
import random

import pytest
from support.small_project import SmallProject

SCHEMA = "ivm_vb"
RAW = "ivm_vb_raw"

STG_ORDERS = (
    "{{ config(materialized='view') }}\n"
    "select oid, cust, lower(status) as status, amount, amount * 2 "
    f"from {RAW}.orders where oid is not null"
)
MODELS = {
    "stg_orders": STG_ORDERS,
    # a view over a view and over a hand-made view (`hand_customers`, made in the fixture)
    "int_orders": (
        "{{ config(materialized='view') }}\n"
        "select o.oid, o.cust, o.status, o.amount, h.region "
        "from {{ ref('stg_orders') }} o left join "
        f"{SCHEMA}.hand_customers h on h.cid = o.cust"
    ),
    # an aggregating view: a sub-query state of the models over it
    "cust_totals": (
        "{{ config(materialized='view') }}\n"
        "select cust, sum(amount) as total, count(*) as n from {{ ref('stg_orders') }} group by cust"
    ),
    "big_orders": (
        "{{ config(materialized='ephemeral') }}\n"
        "select * from {{ ref('stg_orders') }} where amount > 10 or amount is null"
    ),
    "mart_region": (
        "{{ config(materialized='ivm') }}\n"
        "select i.region, i.status, count(*) as n, sum(i.amount) as s, max(i.amount) as m "
        "from {{ ref('int_orders') }} i group by i.region, i.status"
    ),
    "mart_big": (
        "{{ config(materialized='ivm') }}\n"
        "select b.cust, count(*) as n, sum(`(amount * 2)`) as twice from {{ ref('big_orders') }} b "
        "group by b.cust"
    ),
    "mart_totals": (
        "{{ config(materialized='ivm') }}\n"
        "select c.region, count(*) as n, sum(t.total) as total, sum(t.n) as orders "
        "from {{ ref('cust_totals') }} t join "
        f"{RAW}.customers c on c.cid = t.cust group by c.region"
    ),
    # an ivm model over an ivm model (whose relation is a view over its state table)
    "mart_over_mart": (
        "{{ config(materialized='ivm') }}\n"
        "select r.region, count(*) as statuses, sum(r.n) as n, max(r.m) as m "
        "from {{ ref('mart_region') }} r group by r.region"
    ),
}
MARTS = ("mart_region", "mart_big", "mart_totals", "mart_over_mart")
STATUSES = ("A", "b", "C", None)
REGIONS = ("north", "south", None)


def _amount(rng: random.Random) -> str:
    return "NULL" if rng.random() < 0.15 else f"{rng.randint(-5, 40)}.{rng.randint(0, 99):02d}"


def _text(value: str | None) -> str:
    return "NULL" if value is None else f"'{value}'"


def _order(rng: random.Random, oid: int | None) -> str:
    cust = "NULL" if rng.random() < 0.1 else str(rng.randint(1, 6))
    return (
        f"({'NULL' if oid is None else oid}, {cust}, {_text(rng.choice(STATUSES))}, {_amount(rng)})"
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> SmallProject:
    p = SmallProject(tmp_path_factory.mktemp("view_bases"), "view_bases", SCHEMA)
    p.start_spark()
    for schema in (SCHEMA, RAW):
        p.sql(f"CREATE DATABASE IF NOT EXISTS {schema}")
    for view in ("hand_customers", "unqualified_customers", "on_parquet_view"):
        p.sql(f"DROP VIEW IF EXISTS {SCHEMA}.{view}")
    for name in (f"{RAW}.orders", f"{RAW}.customers", f"{SCHEMA}.customers", f"{RAW}.plain"):
        p.sql(f"DROP TABLE IF EXISTS {name}")
    p.sql(
        f"CREATE TABLE {RAW}.orders (oid int, cust int, status string, amount decimal(10,2)) USING iceberg"
    )
    p.sql(f"CREATE TABLE {RAW}.customers (cid int, region string) USING iceberg")
    rng = random.Random(12)
    rows = [_order(rng, rng.choice([None, *range(1, 30)])) for _ in range(30)]
    p.sql(f"INSERT INTO {RAW}.orders VALUES {', '.join(rows + rows[:3])}")
    customers = [f"({c}, {_text(rng.choice(REGIONS))})" for c in (1, 2, 3, 4, 5, 5)]
    p.sql(f"INSERT INTO {RAW}.customers VALUES {', '.join(customers)}, (NULL, 'north')")
    p.sql(f"CREATE VIEW {SCHEMA}.hand_customers AS SELECT cid, region FROM {RAW}.customers")
    # The model's schema has a `customers` table too, with other rows, and this view names
    # `customers` without a database (made while RAW was the current database).
    p.sql(f"CREATE TABLE {SCHEMA}.customers (cid int, region string) USING iceberg")
    p.sql(f"INSERT INTO {SCHEMA}.customers VALUES (1, 'decoy'), (2, 'decoy'), (3, 'decoy')")
    p.sql(f"USE {RAW}")
    try:
        p.sql(f"CREATE VIEW {SCHEMA}.unqualified_customers AS SELECT cid, region FROM customers")
    finally:
        p.sql("USE default")
    p.sql(f"CREATE TABLE {RAW}.plain (k string, x int) USING parquet")
    p.sql(f"INSERT INTO {RAW}.plain VALUES ('a', 1), (NULL, 2)")
    p.sql(f"CREATE VIEW {SCHEMA}.on_parquet_view AS SELECT k, x FROM {RAW}.plain")
    for name, text in MODELS.items():
        (p.root / "models" / f"{name}.sql").write_text(text)
    tests = {"version": 2, "models": [{"name": m, "data_tests": ["ivm_consistent"]} for m in MARTS]}
    (p.root / "models" / "consistency.yml").write_text(json.dumps(tests))
    return p


def _change(p: SmallProject, rng: random.Random) -> None:
    new = [_order(rng, rng.choice([None, *range(1, 40)])) for _ in range(rng.randint(1, 5))]
    p.sql(f"INSERT INTO {RAW}.orders VALUES {', '.join(new)}")
    p.sql(f"DELETE FROM {RAW}.orders WHERE oid % 7 = {rng.randint(0, 6)}")
    p.sql(
        f"UPDATE {RAW}.orders SET amount = amount + 11, status = {_text(rng.choice(STATUSES))} "
        f"WHERE cust = {rng.randint(1, 6)}"
    )
    p.sql(
        f"UPDATE {RAW}.customers SET region = {_text(rng.choice(REGIONS))} WHERE cid = {rng.randint(1, 5)}"
    )
    if rng.random() < 0.5:
        p.sql(
            f"INSERT INTO {RAW}.customers VALUES ({rng.randint(1, 7)}, {_text(rng.choice(REGIONS))})"
        )


def test_models_over_views_refresh_incrementally_and_stay_exact(project: SmallProject) -> None:
    p = project
    messages = p.run()
    for mart in MARTS:
        assert messages[mart].startswith("built (first run)"), messages
    p.check_models(MARTS)

    rng = random.Random(7)
    for _ in range(3):
        _change(p, rng)
        messages = p.run()  # the views are re-created by dbt every run, with the same SQL
        for mart in MARTS:
            assert "built" not in messages[mart], messages[mart]
        p.check_models(MARTS)
    messages = p.run("--select", *MARTS)
    for mart in MARTS:
        assert messages[mart].startswith("no MERGE"), messages[mart]


def test_a_changed_view_definition_rebuilds_its_readers_and_says_why(project: SmallProject) -> None:
    p = project
    p.run()
    (p.root / "models" / "stg_orders.sql").write_text(STG_ORDERS + " and amount is not null")
    try:
        messages = p.run()
        for mart in MARTS[:3]:
            assert "the definition of view ivm_vb.stg_orders changed" in messages[mart], messages
        # its upstream's state was rebuilt (replaced in one commit) under it: the rebuild
        # reaches it as the version diff of that state
        upstream = "delta rows (version diff (its state is not a descendant of the version"
        assert messages["mart_over_mart"].startswith("refreshed (ivm_vb.mart_region__ivm_state"), (
            messages
        )
        assert upstream in messages["mart_over_mart"], messages
        p.check_models(MARTS)
        _change(p, random.Random(3))
        messages = p.run()
        assert all("built" not in messages[m] for m in MARTS), messages
        p.check_models(MARTS)
    finally:
        (p.root / "models" / "stg_orders.sql").write_text(STG_ORDERS)


def test_a_model_run_alone_over_a_stale_upstream_says_so(project: SmallProject) -> None:
    """`dbt run -s mart_over_mart` after a change of the tables under mart_region: the run
    reflects mart_region as of its last run (as a fresh run of its SQL would) and says the
    upstream is behind, naming the table that changed; once the upstream ran, no such note."""
    p = project
    p.run()
    p.sql(f"UPDATE {RAW}.orders SET amount = amount + 1 WHERE cust = 2")
    message = p.run("--select", "mart_over_mart")["mart_over_mart"]
    assert (
        "upstream state ivm_vb.mart_region__ivm_state is behind its base tables "
        f"({RAW}.orders changed since its last run)"
    ) in message, message
    assert "`dbt run -s +mart_over_mart` refreshes it first" in message, message
    p.check_models(["mart_over_mart"])
    messages = p.run()
    assert "behind" not in messages["mart_over_mart"], messages
    p.check_models(MARTS)


def test_a_model_over_a_view_over_a_parquet_table_refreshes_by_snapshot_diff(
    project: SmallProject,
) -> None:
    p = project
    (p.root / "models" / "over_parquet.sql").write_text(
        "{{ config(materialized='ivm') }}\n"
        f"select k, count(*) as n, sum(x) as s from {SCHEMA}.on_parquet_view group by k"
    )
    try:
        assert p.run("--select", "over_parquet")["over_parquet"].startswith("built")
        p.sql(f"INSERT INTO {RAW}.plain VALUES ('a', 5), (NULL, NULL), ('b', 1)")
        message = p.run("--select", "over_parquet")["over_parquet"]
        assert message.startswith("refreshed") and "__ivm_copy__ivm_vb_raw__plain" in message
        p.check_models(("over_parquet",))
    finally:
        (p.root / "models" / "over_parquet.sql").unlink()


def test_a_view_with_an_unqualified_table_name_is_refused_by_name(project: SmallProject) -> None:
    p = project
    (p.root / "models" / "refused.sql").write_text(
        "{{ config(materialized='ivm') }}\n"
        f"select region, count(*) as n from {SCHEMA}.unqualified_customers group by region"
    )
    try:
        result = p.dbt("run", "--select", "refused")
        assert not result.success
        message = " ".join(str(r.message) for r in result.result.results)
        expected = f"view {SCHEMA}.unqualified_customers reading table customers without a database"
        assert expected in message, message
        names = {r[1] for r in p.sql(f"SHOW TABLES IN {SCHEMA}")}
        assert not any(n.startswith("refused") for n in names), names
    finally:
        (p.root / "models" / "refused.sql").unlink()
