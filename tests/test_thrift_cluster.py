"""The plugin on a Spark cluster: `method: thrift` against a Thrift server whose catalog is
Iceberg, on a standalone master and worker started on loopback from the pyspark install
(`cluster.py`; warehouse and metastore in a temporary folder; stopped at the end of the module,
also on failure).

The same test code as the embedded runs: the differential harness for a subset of families
(`THRIFT_FAMILIES`: an outer join under MIN/MAX, a window, a chain of ivm models; no
merge-on-read base since the subset was trimmed: the SQL capture of delete files is shown in
session mode by `test_touched_files.py`, with the file reads switched off) and every
outer-join case. Over thrift the refresh reads changelogs through Iceberg's
`create_changelog_view` procedure (the session method reads the raw scan), so this is a
different capture path, not a repetition. Also: `method: session` with the cluster as
`spark.master`, and the errors of an unreachable server and of a server without Iceberg.

The loopback server's sessions resolve two-part names in a named Iceberg catalog, `lake`
(`cluster.py`), so these families and cases run there, against the session catalog of the
embedded runs; the families' base tables are in a Hadoop catalog, `files` (a folder, no
server), so every refresh of them reads sources of another catalog than the model's.

`IVM_TEST_TARGET=thrift://host:port` runs it against a Thrift server you started instead.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ivm_harness.config import ROUND_PLAN, HarnessConfig
from ivm_harness.families import FAMILIES
from ivm_harness.report import HarnessReport
from ivm_harness.runner import Harness
from ivm_harness.spec import collect_tables
from support.cluster import FILES_CATALOG, NAMED_CATALOG, free_port
from support.own_process import run_script
from support.small_project import SmallProject
from support.targets import THRIFT, default_target, is_thrift, shared_cluster, stop_shared
from test_outer_join_cases import CASES, SCHEMA, Case, build_and_refresh, check_case

from dbt.adapters.spark_ivm.compiler.runtime.failpoints import PAUSE_ENV

#: Families of the differential harness that run through thrift in the default suite.
#: Each takes a flow of the refresh runner over thrift's own paths (changelogs through
#: `create_changelog_view`, `CACHE TABLE` scratch relations, metadata by SQL); `join3_agg` and
#: `distinct_join` left the subset for the suite's time (2026-11-26, about 180 s of its 880 s):
#: their operators add delta SQL only, the same in both methods, which the session harness
#: runs for every family, and the subset keeps an inner join (`ivm_stack3`), an outer join,
#: MIN/MAX lists, a window's commit and the delta log.
THRIFT_FAMILIES = (
    "left_join_agg",  # outer join under an aggregate with MIN/MAX lists
    "window_top1",  # window sub-query state (its own commit: affected partitions swapped)
    "ivm_stack3",  # inner join over three ivm models in a chain: each reads its upstream's log
)
#: Change rounds of the thrift subset (the default plan has 5): the first changes every table
#: of the subset (`all`: a `mixed` round draws from every family's tables, and once changed
#: none of this subset's, so that a round tested nothing), the state the build wrote; the
#: second a random mix, on a state a refresh wrote. (`empty`, every group removed and
#: refilled, left this subset for the suite's time, 2026-11-26: ~80 s of its ~310 s; the
#: session harness runs it for every family, with the same delta SQL.)
THRIFT_PLAN = ("all", "mixed")


def _target() -> str:
    """`thrift` (the loopback cluster) unless IVM_TEST_TARGET names a Thrift server."""
    target = default_target()
    return target if is_thrift(target) else THRIFT


@pytest.fixture(scope="module")
def cluster_target() -> Iterator[str]:
    """Starts the loopback cluster (unless a server is named) for this module; stops it after."""
    target = _target()
    if target == THRIFT:
        shared_cluster()  # fails with the process's log when the cluster cannot start
    yield target
    if target == THRIFT and default_target() != THRIFT:
        stop_shared()  # IVM_TEST_TARGET=thrift: other modules still use it (stopped at exit)


@pytest.fixture(scope="module")
def thrift_report(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    cluster_target: str,
    harness_config: HarnessConfig,
    record_harness_report,
) -> HarnessReport:
    """The harness's rounds for THRIFT_FAMILIES (those selected), all through thrift."""
    selected = {
        item.callspec.params["thrift_family"]
        for item in request.session.items
        if "thrift_family" in getattr(getattr(item, "callspec", None), "params", {})
    }
    families = [f for f in FAMILIES if f.name in selected]
    config = dataclasses.replace(harness_config, target=cluster_target)
    if cluster_target == THRIFT and config.base_catalog is None:
        # sources in a catalog of their own (issue 38): the base tables in the loopback
        # server's Hadoop catalog, the models in its default one
        config = dataclasses.replace(config, base_catalog=FILES_CATALOG)
    if config.plan == ROUND_PLAN and config.rounds == len(ROUND_PLAN):  # not set by IVM_ROUND_PLAN
        config = dataclasses.replace(config, plan=THRIFT_PLAN, rounds=len(THRIFT_PLAN))
    h = Harness(
        families,
        config,
        tmp_path_factory.mktemp("ivm_harness_thrift"),
        all_tables=collect_tables(FAMILIES),
    )
    try:
        h.setup()
        report = h.run_rounds()
        record_harness_report(f"ivm harness through {cluster_target}", report)
        return report
    finally:
        if h._conn is not None:
            h.conn.close()


@pytest.mark.parametrize("thrift_family", THRIFT_FAMILIES)
def test_family_thrift(thrift_family: str, thrift_report: HarnessReport) -> None:
    """The family's relation matched its SELECT after the build and every round, over thrift."""
    failures = thrift_report.failures.get(thrift_family)
    assert failures is not None, f"family {thrift_family} did not run"
    if failures:
        pytest.fail(failures[0].text, pytrace=False)


@pytest.fixture(scope="module")
def outer_refreshed(
    tmp_path_factory: pytest.TempPathFactory, cluster_target: str
) -> Iterator[SmallProject]:
    r = build_and_refresh(tmp_path_factory.mktemp("outer_cases_thrift"), cluster_target)
    yield r
    r.conn.close()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_outer_join_case_thrift(case: Case, outer_refreshed: SmallProject) -> None:
    check_case(case, outer_refreshed)


def test_models_live_in_the_default_catalog(outer_refreshed: SmallProject, cluster_target: str):
    """The loopback server's sessions default to the named Iceberg catalog `lake`: each case
    model's view and state are there, and a run with nothing new finds the views (dbt-spark
    lists no view of a named catalog by itself) and refreshes nothing."""
    r = outer_refreshed
    catalog = str(r.sql("SELECT current_catalog()")[0][0])
    if cluster_target == THRIFT:
        assert catalog == NAMED_CATALOG, catalog
    views = {str(row[1]) for row in r.sql(f"SHOW VIEWS IN {catalog}.{SCHEMA}")}
    tables = {str(row[1]) for row in r.sql(f"SHOW TABLES IN {catalog}.{SCHEMA}")}
    for case in CASES:
        assert case.name in views, (case.name, sorted(views))
        assert f"{case.name}__ivm_state" in tables, (case.name, sorted(tables))
    again = r.run()
    assert all(again[c.name].startswith("no MERGE") for c in CASES), again


#: A model over three catalogs: the current one (`lake`), the session catalog named, and a
#: merge-on-read table of the Hadoop catalog under a LEFT join, with a MIN.
THREE_CATALOGS_SQL = f"""
select r.region, c.segment, count(*) as n, sum(o.amount) as total, min(o.amount) as least
from {SCHEMA}.cat_orders o
join spark_catalog.{SCHEMA}.cat_customers c on o.cust = c.cid
left join {FILES_CATALOG}.raw.regions r on r.cid = o.cust
group by r.region, c.segment
"""


def test_a_model_reads_three_catalogs(tmp_path: Path, cluster_target: str) -> None:
    """Sources in any catalog (issue 38), over thrift (the changelog through each catalog's
    own `create_changelog_view` procedure, the merge-on-read table by SQL): the model builds,
    refreshes a change of all three tables exactly, then finds nothing to do, and its state
    lives in the current catalog. (A Thrift server named by IVM_TEST_TARGET needs a Hadoop
    or other Iceberg catalog called `files`.)"""
    r = SmallProject(tmp_path, "three_catalogs", SCHEMA, target=cluster_target).started()
    r.model("three_catalogs", THREE_CATALOGS_SQL)
    r.base_table("cat_orders", "oid int, cust int, amount decimal(10,2)", "(1, 1, 10.00)",
                 "(2, 1, 5.50)", "(3, 2, 7.25)", "(4, 3, 1.00)")  # fmt: skip
    customers = f"spark_catalog.{SCHEMA}.cat_customers"
    r.sql(f"DROP TABLE IF EXISTS {customers}")
    r.sql(f"CREATE TABLE {customers} (cid int, segment string) USING iceberg")
    r.sql(f"INSERT INTO {customers} VALUES (1, 'a'), (2, 'b'), (3, 'b')")
    regions = f"{FILES_CATALOG}.raw.regions"
    r.sql(f"CREATE NAMESPACE IF NOT EXISTS {FILES_CATALOG}.raw")
    r.sql(f"DROP TABLE IF EXISTS {regions}")
    r.sql(
        f"CREATE TABLE {regions} (cid int, region string) USING iceberg TBLPROPERTIES "
        "('format-version' = '2', 'write.delete.mode' = 'merge-on-read', "
        "'write.update.mode' = 'merge-on-read')"
    )
    r.sql(f"INSERT INTO {regions} VALUES (1, 'north'), (2, 'south'), (2, 'east')")
    assert r.run()["three_catalogs"].startswith("built"), "first run"
    for statement in (
        f"DELETE FROM {SCHEMA}.cat_orders WHERE oid = 1",
        f"INSERT INTO {SCHEMA}.cat_orders VALUES (5, 2, 99.99), (6, 4, 3.00)",
        f"INSERT INTO {customers} VALUES (4, 'c')",
        f"UPDATE {customers} SET segment = 'a' WHERE cid = 3",
        f"UPDATE {regions} SET region = 'west' WHERE cid = 1",
        f"DELETE FROM {regions} WHERE region = 'east'",
        f"INSERT INTO {regions} VALUES (4, 'north'), (3, NULL)",
    ):
        r.sql(statement)
    refreshed = r.run()["three_catalogs"]
    assert refreshed.startswith("refreshed"), refreshed
    for relation in (f"{SCHEMA}.cat_orders", customers, regions):
        assert relation in refreshed, (relation, refreshed)
    r.check_models(["three_catalogs"])
    assert r.run()["three_catalogs"].startswith("no MERGE")
    catalog = str(r.sql("SELECT current_catalog()")[0][0])
    tables = {str(row[1]) for row in r.sql(f"SHOW TABLES IN {catalog}.{SCHEMA}")}
    assert "three_catalogs__ivm_state" in tables, sorted(tables)
    r.conn.close()


def _test_statuses(r: SmallProject, *args: str) -> tuple[bool, dict[str, str]]:
    """`dbt test` (args appended): success, and each test's status by its model."""
    res = r.dbt("test", *args)
    results = getattr(res.result, "results", None) or []
    statuses = {
        str(res_.node.attached_node or res_.node.name).rsplit(".", 1)[-1]: str(
            getattr(res_.status, "value", res_.status)
        )
        for res_ in results
    }
    return bool(res.success), statuses


def test_ivm_consistent_thrift(outer_refreshed: SmallProject) -> None:
    """`dbt test` with `ivm_consistent` over thrift passes on every refreshed case model, and
    fails on one whose state gained a duplicated data row. Runs after the case checks (it
    damages one state); the module's last use of the project."""
    r = outer_refreshed
    tests = {
        "version": 2,
        "models": [{"name": c.name, "data_tests": ["ivm_consistent"]} for c in CASES],
    }
    (r.root / "models" / "consistency.yml").write_text(json.dumps(tests))
    ok, statuses = _test_statuses(r)
    assert ok and statuses == {c.name: "pass" for c in CASES}, statuses
    victim = f"{SCHEMA}.{CASES[0].name}__ivm_state"
    r.sql(f"INSERT INTO {victim} SELECT * FROM {victim} WHERE __ivm_row__ = 0 LIMIT 1")
    ok, statuses = _test_statuses(r, "--select", CASES[0].name)
    assert not ok and statuses == {CASES[0].name: "fail"}, statuses


def test_two_runs_refreshing_one_model_at_once_apply_each_change_once(
    tmp_path: Path, cluster_target: str
) -> None:
    """Two `dbt run` processes refresh the same model through the server at once. Ordered
    for the worst case: the first reads the watermarks and computes its delta, then waits
    just before its commit while the second refreshes and commits the same change. The
    first must then apply nothing (it fails, saying another run committed), the relation
    equals its SQL, and the next change is refreshed exactly: no change applied twice, none
    lost. (Without the commit's guard the first applied the change again and exited 0.)"""
    schema = "ivm_concurrent"
    p = SmallProject(tmp_path, "concurrent", schema, target=cluster_target)
    p.sql(f"CREATE DATABASE IF NOT EXISTS {schema}")
    p.sql(f"DROP TABLE IF EXISTS {schema}.t")
    p.sql(f"CREATE TABLE {schema}.t (k string, x int) USING iceberg")
    p.sql(f"INSERT INTO {schema}.t VALUES ('a', 1), ('a', 2), ('b', 3), (NULL, 4)")
    select = f"select k, count(*) as n, sum(x) as s, max(x) as mx from {schema}.t group by k"
    p.model("m", select)
    p.run()
    p.sql(f"INSERT INTO {schema}.t VALUES ('c', 0), ('a', 7)")
    p.sql(f"DELETE FROM {schema}.t WHERE x = 3")
    command = [
        sys.executable, "-m", "dbt.cli.main", "run",
        "--project-dir", str(tmp_path), "--profiles-dir", str(tmp_path),
    ]  # fmt: skip
    resume = tmp_path / "resume"
    paused = {**os.environ, PAUSE_ENV: f"recompute:{resume}"}
    first = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=paused
    )
    deadline = time.monotonic() + 300
    while not Path(f"{resume}.m.paused").exists() and first.poll() is None:
        assert time.monotonic() < deadline, "the first run never reached its commit"
        time.sleep(0.5)
    second = subprocess.run(command, check=False, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stdout[-3000:]
    resume.write_text("go")
    output = first.communicate(timeout=600)[0]
    print("the first run said:", [ln for ln in output.splitlines() if "another run" in ln])
    assert first.returncode != 0, output[-3000:]
    assert "another run committed to its state" in output, output[-3000:]
    assert p.bag(f"SELECT * FROM {schema}.m") == p.bag(select)
    p.sql(f"UPDATE {schema}.t SET x = x + 10 WHERE k = 'a'")
    p.run()
    assert p.bag(f"SELECT * FROM {schema}.m") == p.bag(select)


# ------------------------------------------------------------------------------------------------
# method: session with the cluster as spark.master (item 2)
# ------------------------------------------------------------------------------------------------


def test_session_driver_on_cluster_master(tmp_path: Path) -> None:
    """`method: session` + `spark.master: spark://...`: the driver in the dbt process (its own
    process here), executors from the loopback master; build, refresh, `ivm_consistent`."""
    cluster = shared_cluster()
    out = run_script(
        "session_on_cluster.py",
        cluster.master_url,
        str(cluster.master_web_port),
        str(tmp_path),
        cwd=tmp_path,
        timeout=600,
    )
    assert out["master"] == cluster.master_url, out
    apps = {a["name"]: a["cores"] for a in out["active_apps"]}
    assert apps.get("spark-ivm-session-on-cluster", 0) >= 1, out["active_apps"]
    assert out["build"]["success"], out["build"]
    assert out["build"]["messages"][0].startswith("built"), out["build"]
    assert out["refresh"]["success"], out["refresh"]
    assert out["refresh"]["messages"][0].startswith("refreshed"), out["refresh"]
    assert out["test"]["success"] and out["test"]["statuses"] == ["pass"], out["test"]
    assert out["difference"] == [[0], [0]], out["difference"]
    assert out["rows"] == 3, out  # segments a, b, c after the changes


# ------------------------------------------------------------------------------------------------
# errors a cluster user meets (item 5)
# ------------------------------------------------------------------------------------------------


def _failing_run(root: Path, output: dict) -> str:
    """`dbt run` of a one-model ivm project with this profile output; its failure text."""
    project = SmallProject(root, "cluster_errors", "cluster_errors", target="session")
    project.model("m", "select 1 as x")
    profile = {"cluster_errors": {"target": "dev", "outputs": {"dev": output}}}
    (root / "profiles.yml").write_text(json.dumps(profile))
    res = project.dbt("run")
    assert not res.success
    results = getattr(res.result, "results", None) or []
    return "\n".join([str(r.message) for r in results] + [str(res.exception)])


def test_thrift_server_unreachable(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    output = {
        "type": "spark_ivm",
        "method": "thrift",
        "host": "127.0.0.1",
        "port": port,
        "user": "dbt",
        "schema": "cluster_errors",
    }
    text = _failing_run(tmp_path, output)
    assert f"cannot reach the Spark Thrift server at 127.0.0.1:{port}" in text, text
    assert "hive.server2.thrift.port" in text, text


def test_thrift_catalog_not_iceberg(tmp_path: Path) -> None:
    """An ordinary Spark Thrift server (no Iceberg settings) is refused on the first connection,
    with the server named and what it lacks."""
    cluster = shared_cluster()
    port = cluster.start_plain_thrift_server()
    try:
        text = _failing_run(tmp_path, {**cluster.thrift_profile("cluster_errors"), "port": port})
    finally:
        cluster.stop_process("plain-thrift-server")
    assert f"the Spark Thrift server at 127.0.0.1:{port} does not use Apache Iceberg" in text, text
    assert "spark.sql.catalog.spark_catalog is unset" in text, text
