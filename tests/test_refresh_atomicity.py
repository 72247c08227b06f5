"""A refresh that fails at any step leaves the previous relation visible and the next run correct.

Failures are injected after each step of the refresh (DBT_SPARK_IVM_FAIL_AFTER=<step>): the
view must still show what it showed before (or, after the commit, the new result), and the next
run must make it equal to a fresh run of its SQL: no delta applied twice, none skipped.
A rebuild (changed SQL, `--full-refresh`) replaces the state in one commit: a reader sees the
old relation until then, a failure just before that commit leaves it, and one after it leaves
a readable relation that the next run finishes.
Also: bad input gets an error naming the model and the construct, and creates nothing.
"""

from __future__ import annotations

import os
import random
import threading
from collections import Counter

import pytest
from ivm_harness.connection import SqlConnection
from support.small_project import SmallProject

from dbt.adapters.spark_ivm.compiler.runtime.failpoints import (
    FAIL_ENV,
    REBUILD_STEP,
    REPLACED_STEP,
    STEPS,
)

SCHEMA = "ivm_atomic"
MODEL_SQL = (
    "select k, count(*) as n, sum(x) as s, max(x) as mx, count(distinct x) as dx "
    f"from {SCHEMA}.base group by k"
)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> SmallProject:
    p = SmallProject(tmp_path_factory.mktemp("atomic"), "atomic", SCHEMA)
    p.model("agg", MODEL_SQL)
    p.model(
        "generated",
        f"select k, e from {SCHEMA}.base lateral view explode(array(x, 1)) t as e",
    )
    assert p.dbt("debug").success
    p.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    p.sql(f"DROP TABLE IF EXISTS {SCHEMA}.base")
    p.sql(f"CREATE TABLE {SCHEMA}.base (k string, x int) USING iceberg")
    p.sql(f"INSERT INTO {SCHEMA}.base VALUES ('a', 1), ('a', 2), ('b', 3), (NULL, 4), ('a', 2)")
    return p


def _change(p: SmallProject, rnd: random.Random) -> None:
    k = rnd.choice(["'a'", "'b'", "'c'", "NULL"])
    p.sql(f"INSERT INTO {SCHEMA}.base VALUES ({k}, {rnd.randint(-5, 9)}), ('a', 2)")
    p.sql(f"DELETE FROM {SCHEMA}.base WHERE x = {rnd.randint(1, 4)}")
    p.sql(f"UPDATE {SCHEMA}.base SET x = x + 1 WHERE k <=> {k}")


def _scratch_views(p: SmallProject) -> list[str]:
    """The refresh's scratch relations left in the session (temp views named `__ivm_*`);
    on a thrift target the statements' session is the server's, where this sees none."""
    return [str(r[1]) for r in p.sql("SHOW VIEWS") if str(r[1]).startswith("__ivm") and r[2]]


def _run_failing_after(p: SmallProject, step: str) -> None:
    """`dbt run` of the model with a failure injected after `step`; it must fail."""
    os.environ[FAIL_ENV] = step
    try:
        result = p.dbt("run", "--select", "agg")
    finally:
        del os.environ[FAIL_ENV]
    assert not result.success, f"the injected failure after {step} did not fail the run"


@pytest.mark.parametrize("step", STEPS)
def test_failed_refresh_keeps_previous_state_and_next_run_is_correct(
    project: SmallProject, step: str
):
    p = project
    assert p.dbt("run", "--select", "agg").success
    assert p.bag(f"SELECT * FROM {SCHEMA}.agg") == p.bag(MODEL_SQL)
    before = p.bag(f"SELECT * FROM {SCHEMA}.agg")

    _change(p, random.Random(step))
    _run_failing_after(p, step)
    assert _scratch_views(p) == [], f"a refresh failing after {step} left its scratch views"
    after_failure = p.bag(f"SELECT * FROM {SCHEMA}.agg")
    if step == "commit":
        assert after_failure == p.bag(MODEL_SQL), "a failure after the commit lost the commit"
    else:
        assert after_failure == before, f"a failure after {step} changed the visible relation"

    assert p.dbt("run", "--select", "agg").success
    assert p.bag(f"SELECT * FROM {SCHEMA}.agg") == p.bag(MODEL_SQL)
    # And once more with a further change: the watermark is where it should be.
    _change(p, random.Random(step + "again"))
    assert p.dbt("run", "--select", "agg").success
    assert p.bag(f"SELECT * FROM {SCHEMA}.agg") == p.bag(MODEL_SQL)
    assert _scratch_views(p) == [], "a refresh left its scratch views behind"


def _run_error(p: SmallProject, model: str) -> str:
    result = p.dbt("run", "--select", model)
    assert not result.success
    messages = [str(r.message) for r in result.result.results] if result.result else []
    return " ".join(messages) + str(result.exception or "")


def test_a_generator_is_refused_by_name_and_nothing_is_created(project: SmallProject):
    message = _run_error(project, "generated")
    assert "generated" in message and "LATERAL VIEW" in message, message
    tables = {r[1] for r in project.sql(f"SHOW TABLES IN {SCHEMA}")}
    assert not any(t.startswith("generated") for t in tables), tables


def test_changed_sql_rebuilds_and_full_refresh_rebuilds(project: SmallProject):
    p = project
    assert p.dbt("run", "--select", "agg").success
    model = p.root / "models" / "agg.sql"
    original = model.read_text()
    try:
        model.write_text(original.replace("count(*) as n", "count(*) + 1 as n"))
        result = p.dbt("run", "--select", "agg")
        assert result.success
        assert "model SQL changed" in str(result.result.results[0].message)
        expected = MODEL_SQL.replace("count(*) as n", "count(*) + 1 as n")
        assert p.bag(f"SELECT * FROM {SCHEMA}.agg") == p.bag(expected)
    finally:
        model.write_text(original)
    result = p.dbt("run", "--select", "agg", "--full-refresh")
    assert result.success and "--full-refresh" in str(result.result.results[0].message)
    assert p.bag(f"SELECT * FROM {SCHEMA}.agg") == p.bag(MODEL_SQL)


EDITED_SQL = MODEL_SQL.replace("count(*) as n", "count(*) + 1 as n")


@pytest.mark.parametrize("step", [REBUILD_STEP, REPLACED_STEP])
def test_a_rebuild_failing_around_its_commit_leaves_a_readable_relation(
    project: SmallProject, step: str
):
    p = project
    assert p.dbt("run", "--select", "agg").success
    before = p.bag(f"SELECT * FROM {SCHEMA}.agg")
    model = p.root / "models" / "agg.sql"
    original = model.read_text()
    try:
        model.write_text(original.replace("count(*) as n", "count(*) + 1 as n"))
        _run_failing_after(p, step)
        # Readable either way: the old rows before the commit; after it the new state (read
        # through the old view, whose SQL the next run replaces).
        after_failure = p.bag(f"SELECT * FROM {SCHEMA}.agg")
        if step == REBUILD_STEP:
            assert after_failure == before, "a failure before the rebuild's commit lost rows"
        assert p.dbt("run", "--select", "agg").success
        assert p.bag(f"SELECT * FROM {SCHEMA}.agg") == p.bag(EDITED_SQL)
        _change(p, random.Random(step))
        assert p.dbt("run", "--select", "agg").success
        assert p.bag(f"SELECT * FROM {SCHEMA}.agg") == p.bag(EDITED_SQL)
    finally:
        model.write_text(original)
    assert p.dbt("run", "--select", "agg").success
    assert p.bag(f"SELECT * FROM {SCHEMA}.agg") == p.bag(MODEL_SQL)


def test_readers_see_the_relation_throughout_a_full_refresh(project: SmallProject):
    """Another session reading the model while `--full-refresh` rebuilds it reads the old
    rows or the new ones, and never fails for a missing state or view."""
    p = project
    assert p.dbt("run", "--select", "agg").success
    _change(p, random.Random("readers"))
    assert p.dbt("run", "--select", "agg").success
    expected = p.bag(MODEL_SQL)
    view_before = dict(p.sql(f"SHOW TBLPROPERTIES {SCHEMA}.agg"))
    reader = SqlConnection(p.output)
    reads: list[Counter] = []
    errors: list[str] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            try:
                reads.append(Counter(reader.run(f"SELECT * FROM {SCHEMA}.agg")))
            except Exception as e:  # noqa: BLE001 - what the reader saw is the outcome
                errors.append(str(e).splitlines()[0][:300])

    thread = threading.Thread(target=read)
    thread.start()
    try:
        result = p.dbt("run", "--select", "agg", "--full-refresh")
    finally:
        stop.set()
        thread.join()
    assert result.success and "--full-refresh" in str(result.result.results[0].message)
    assert errors == [], f"a reader failed during the rebuild: {errors[:3]}"
    assert len(reads) >= 2, "the reader did not read during the rebuild"
    assert all(r == expected for r in reads), "a reader saw rows of neither state"
    assert p.bag(f"SELECT * FROM {SCHEMA}.agg") == expected
    # The same SQL makes the same view: the one there was kept, not dropped and created.
    assert dict(p.sql(f"SHOW TBLPROPERTIES {SCHEMA}.agg")) == view_before
