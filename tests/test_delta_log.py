"""An ivm model over another ivm model reads the upstream's applied changes from the
upstream's delta log (issue 12, item 3; `compiler/capture/delta_log.py`).

User-visible outcomes: an upstream read by an ivm model (here through a dbt view) keeps a
delta log, and one read by none keeps none; after the upstream was refreshed several times
alone (`dbt run -s up`), the downstream's run reads the change of all those refreshes from
the log (its message says `delta log of 3 refreshes`) and equals its SQL; a failure between
the upstream's commit and its log append leaves a gap that the downstream notices and
bridges with the version diff of the upstream's state (the message names the gap), exact,
and the run after it reads the log again; when the upstream's old snapshots are expired,
the log entries of those snapshots go with them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from support.small_project import SmallProject

from dbt.adapters.spark_ivm.compiler.capture import delta_log
from dbt.adapters.spark_ivm.compiler.runtime import base_tables, upkeep, upstream
from dbt.adapters.spark_ivm.compiler.runtime.failpoints import FAIL_ENV

SCHEMA = "ivm_dl"
RAW = "ivm_dl_raw"
UP = (
    "select cust, status, count(*) as n, sum(amount) as s, max(amount) as m "
    f"from {RAW}.orders group by cust, status"
)
MID = "{{ config(materialized='view') }}\nselect cust, status, n, s, m from {{ ref('up') }}"
DOWN = (
    "select cust, count(*) as statuses, sum(n) as n, sum(s) as s, max(m) as m, min(m) as low "
    "from {{ ref('mid') }} group by cust"
)
LONE = f"select status, count(*) as n from {RAW}.orders group by status"  # read by no ivm model


def _order(rng: random.Random) -> str:
    cust = "NULL" if rng.random() < 0.15 else str(rng.randint(1, 5))
    status = rng.choice(["'a'", "'b'", "NULL"])
    amount = rng.choice(["NULL", "double('-0.0')", "0.0D", f"{rng.randint(-9, 30)}.5D"])
    return f"({rng.randint(1, 40)}, {cust}, {status}, {amount})"


def _change(p: SmallProject, rng: random.Random) -> None:
    rows = [_order(rng) for _ in range(rng.randint(1, 4))]
    p.sql(f"INSERT INTO {RAW}.orders VALUES {', '.join(rows + rows[:1])}")
    p.sql(f"DELETE FROM {RAW}.orders WHERE oid % 5 = {rng.randint(0, 4)}")
    p.sql(f"UPDATE {RAW}.orders SET amount = amount + 1 WHERE cust = {rng.randint(1, 5)}")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SmallProject]:
    p = SmallProject(tmp_path_factory.mktemp("delta_log"), "delta_log", SCHEMA)
    p.start_spark()
    for schema in (SCHEMA, RAW):
        p.sql(f"CREATE DATABASE IF NOT EXISTS {schema}")
    p.sql(f"DROP TABLE IF EXISTS {RAW}.orders")
    p.sql(
        f"CREATE TABLE {RAW}.orders (oid int, cust int, status string, amount double) USING iceberg"
    )
    rng = random.Random(4)
    rows = [_order(rng) for _ in range(25)]
    p.sql(f"INSERT INTO {RAW}.orders VALUES {', '.join(rows + rows[:4])}")
    p.model("up", UP)
    p.model("down", DOWN)
    p.model("lone", LONE)
    (p.root / "models" / "mid.sql").write_text(MID)
    assert p.run()["down"].startswith("built")
    yield p
    p.sql(f"DROP TABLE IF EXISTS {RAW}.orders")


def _tables(p: SmallProject) -> set[str]:
    return {str(r[1]) for r in p.sql(f"SHOW TABLES IN {SCHEMA}")}


def test_downstream_reads_several_upstream_refreshes_from_the_log(project: SmallProject) -> None:
    p = project
    assert "up__ivm_dlog" in _tables(p)
    assert "lone__ivm_dlog" not in _tables(p)  # no ivm model reads it: no log kept
    rng = random.Random(8)
    for _ in range(3):
        _change(p, rng)
        assert p.run("--select", "up")["up"].startswith("refreshed")
    message = p.run("--select", "down")["down"]
    assert "(delta log of 3 refreshes)" in message, message
    p.check_models(["up", "down"])
    _change(p, rng)
    message = p.run()["down"]
    assert "(delta log of 1 refresh)" in message, message
    p.check_models(["up", "down", "lone"])


def test_a_gap_in_the_log_is_bridged_by_the_version_diff(
    project: SmallProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = project
    rng = random.Random(9)
    _change(p, rng)
    monkeypatch.setenv(FAIL_ENV, "commit")  # fails after up's commit, before its log append
    result = p.dbt("run", "--select", "up")
    assert not result.success
    monkeypatch.delenv(FAIL_ENV)
    _change(p, rng)
    assert p.run("--select", "up")["up"].startswith("refreshed")
    message = p.run("--select", "down")["down"]
    p.check_models(["up", "down"])
    assert (
        "version diff" in message and "(ivm_dl.up__ivm_dlog lacks 1 of 2 refreshes)" in message
    ), message
    _change(p, rng)
    message = p.run()["down"]
    assert "(delta log of 1 refresh)" in message, message
    p.check_models(["up", "down"])


def test_a_hand_run_rollback_of_the_upstream_state_is_seen(project: SmallProject) -> None:
    """Someone rolls the upstream's state back by hand (Iceberg's `rollback_to_snapshot`): the
    upstream shows its older rows again, and its watermarks, kept in the state, go back with
    them. The downstream's watermark is then no ancestor of the state's head, so no chain of
    log entries leads there: it reads the version diff and equals its SQL over the rolled-back
    upstream; the next full run brings the upstream forward again and both are exact.
    """
    p = project
    state = f"{SCHEMA}.up__ivm_state"
    rng = random.Random(11)
    _change(p, rng)
    assert p.run()["down"].startswith("refreshed")
    back_to = int(p.sql(base_tables.heads_sql([state]))[0][2])  # the state's current snapshot
    for _ in range(2):
        _change(p, rng)
        assert p.run()["down"].startswith("refreshed")
    before = p.bag(f"SELECT * FROM {SCHEMA}.down")
    p.sql(f"CALL system.rollback_to_snapshot('{state}', {back_to})")
    message = p.run("--select", "down")["down"]
    assert "version diff" in message, message
    p.check_models(["down"])
    assert p.bag(f"SELECT * FROM {SCHEMA}.down") != before  # the rollback reached down
    _change(p, rng)
    assert p.run()["down"].startswith("refreshed")
    p.check_models(["up", "down"])


def test_entries_of_expired_snapshots_are_deleted(
    project: SmallProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = project
    monkeypatch.setattr(upkeep, "EXPIRE_AT", 3)
    monkeypatch.setattr(upkeep, "RETAIN_LAST", 2)
    rng = random.Random(10)
    for _ in range(4):
        _change(p, rng)
        assert p.run("--select", "up")["up"].startswith("refreshed")
    live = {int(r[0]) for r in p.sql(f"SELECT snapshot_id FROM {SCHEMA}.up__ivm_state.snapshots")}
    logged = {int(r[0]) for r in p.sql(f"SELECT __ivm_dl_snap FROM {SCHEMA}.up__ivm_dlog")}
    assert logged and logged <= live, (logged, live)
    # down's watermark was expired with them: it is rebuilt, and says why
    message = p.run("--select", "down")["down"]
    assert message.startswith("built") and "was expired" in message, message
    p.check_models(["up", "down"])


def _node(materialized: str, *parents: str) -> dict:
    return {"config": {"materialized": materialized}, "depends_on": {"nodes": list(parents)}}


def test_which_models_keep_a_delta_log() -> None:
    """From dbt's graph (no Spark): an ivm model read by an ivm model, directly or through
    views and ephemeral models, keeps a log; one read only through a table model, a test or
    nothing keeps none."""
    graph = {
        "model.p.up": _node("ivm"),
        "model.p.direct": _node("ivm"),
        "model.p.v1": _node("view", "model.p.direct"),
        "model.p.e1": _node("ephemeral", "model.p.v1"),
        "model.p.deep": _node("ivm", "model.p.e1"),
        "model.p.via_table": _node("ivm"),
        "model.p.t": _node("table", "model.p.via_table"),
        "model.p.over_t": _node("ivm", "model.p.t"),
        "test.p.consistent": _node("test", "model.p.via_table"),
        "model.p.down": _node("ivm", "model.p.up", "model.p.deep"),
    }
    assert upstream.has_ivm_readers(graph, "model.p.up")
    assert upstream.has_ivm_readers(graph, "model.p.direct")  # view -> ephemeral -> ivm
    assert upstream.has_ivm_readers(graph, "model.p.deep")
    assert not upstream.has_ivm_readers(graph, "model.p.via_table")
    assert not upstream.has_ivm_readers(graph, "model.p.down")
    assert not upstream.has_ivm_readers(None, "model.p.up")
    assert not upstream.has_ivm_readers(graph, None)
    # a cycle of views (not a valid dbt graph) ends
    looped = {"model.p.a": _node("view", "model.p.b"), "model.p.b": _node("view", "model.p.a")}
    assert not upstream.has_ivm_readers(looped, "model.p.a")


def test_delta_log_statements_name_only_the_log_and_its_state() -> None:
    state = "db.up__ivm_state"
    assert delta_log.log_of(state) == "db.up__ivm_dlog"
    assert delta_log.is_model_state(state)
    assert not delta_log.is_model_state("db.m__ivm_s0__ivm_state")  # handed over in the run
    assert not delta_log.is_model_state("db.m__ivm_aux__ivm_state")
    assert not delta_log.is_model_state("db.orders")
    append = delta_log.append_sql(state, ["k", "__ivm_row__"], 1, 2, ("db.delta", ["k"]))
    assert append.startswith("INSERT INTO `db`.`up__ivm_dlog`"), append
    assert "VERSION AS OF 2" in append and "VERSION AS OF 1" in append, append
    marker_only = delta_log.append_sql(state, ["k", "__ivm_row__"], 1, 2, None)
    assert "VERSION AS OF" not in marker_only, marker_only
    assert "IN (5, 7)" in delta_log.covered_sql(state, [5, 7])
    for statement in delta_log.trim_sqls(state, "2026-01-02 03:04:05"):
        assert "up__ivm_dlog" in statement
