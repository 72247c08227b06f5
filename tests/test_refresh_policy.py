"""`ivm_refresh`: a refresh that knows its cost, and rebuilds that readers never see half done.

The user-visible outcomes: under `auto` a small change is refreshed and a change that
rewrites the whole input is rebuilt, the log line giving both estimates; `full` rebuilds every
run that finds a change; a rebuild chosen so replaces the state's rows in one commit and keeps
the view (the state's history goes on, the view is never dropped), and a failure just before
that commit leaves the old relation and the next run exact; the readers of such a model (an
ivm model over it, the model's own sub-query states) stay exact through it. Each run is in the
state's history, as the documented query and `ivm_explain` show it: its mode, seconds, state
rows and the base snapshots it reflects.

(The rest of the suite runs with `DBT_SPARK_IVM_REFRESH=incremental`, `conftest.py`; these
models set `ivm_refresh` in their config, which comes first.)
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from support.small_project import SmallProject
from support.targets import SESSION

from bench.dbt_runs import STEP_LINE
from dbt.adapters.spark_ivm.compiler.runtime import cost, merge_scope
from dbt.adapters.spark_ivm.compiler.runtime.failpoints import FAIL_ENV, PAUSE_ENV, REBUILD_STEP
from dbt.adapters.spark_ivm.connection_executor import ConnectionExecutor
from dbt.adapters.spark_ivm.jinja_api import TIMINGS_ENV

SCHEMA = "ivm_policy"
AGG_SQL = f"select k, count(*) as n, sum(x) as s, max(x) as mx from {SCHEMA}.base group by k"
# An ivm model over `agg` (which keeps a delta log for it), and a sub-query state.
OVER_SQL = "select n, count(*) as c, sum(s) as s from {{ ref('agg') }} group by n"
OVER_PLAIN = f"select n, count(*) as c, sum(s) as s from ({AGG_SQL}) group by n"
STAGED_SQL = (
    f"select k, x from {SCHEMA}.base where k in "
    f"(select k from {SCHEMA}.base group by k having count(*) > 3)"
)

# A sub-query state (the distinct keys of `side`) over a table the model's own state does
# not read.
NESTED_SQL = f"select k, x from {SCHEMA}.base where k in (select k from {SCHEMA}.side)"

EVENTS_SQL = f"select k, count(*) as n, sum(x) as s from {SCHEMA}.events group by k"


def _history_query(state: str) -> str:
    """The query docs/reference.md gives for a state's runs, over `state`."""
    doc = (Path(__file__).parents[1] / "docs" / "reference.md").read_text()
    found = re.search(r"One row per run.*?```sql\n(.*?)```", doc, re.DOTALL)
    assert found, "docs/reference.md lost its history query"
    return found.group(1).replace("analytics.revenue_by_nation__ivm_state", state)


def _config(policy: str) -> str:
    return f"{{{{ config(materialized='ivm', ivm_refresh='{policy}') }}}}\n"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> SmallProject:
    p = SmallProject(tmp_path_factory.mktemp("policy"), "policy", SCHEMA).started()
    p.base_table("base", "k string, x int")
    # Ten commits, ten files: a one-row insert is a small part of the table's bytes.
    for batch in range(10):
        rows = ", ".join(f"('{'abcd'[(batch + i) % 4]}', {batch * 10 + i})" for i in range(20))
        p.sql(f"INSERT INTO {SCHEMA}.base VALUES {rows}, (NULL, {batch})")
    return p


def _write(p: SmallProject, name: str, policy: str, select: str) -> None:
    (p.root / "models" / f"{name}.sql").write_text(_config(policy) + select)


def _message(p: SmallProject, *models: str) -> dict[str, str]:
    return p.run("--select", *models)


def _equal(p: SmallProject, relation: str, select: str) -> None:
    assert p.bag(f"SELECT * FROM {SCHEMA}.{relation}") == p.bag(select), relation


def _snapshots(p: SmallProject, table: str) -> int:
    return int(p.sql(f"SELECT count(*) FROM {SCHEMA}.{table}.snapshots")[0][0])


def _current(p: SmallProject, table: str) -> int:
    """The table's current snapshot: the one no other snapshot descends from."""
    snapshots = f"{SCHEMA}.{table}.snapshots"
    return int(
        p.sql(
            f"SELECT snapshot_id FROM {snapshots} WHERE snapshot_id NOT IN "
            f"(SELECT parent_id FROM {snapshots} WHERE parent_id IS NOT NULL)"
        )[0][0]
    )


def _is_view(p: SmallProject, name: str) -> bool:
    return name in {str(r[1]) for r in p.sql(f"SHOW VIEWS IN {SCHEMA}")}


def test_auto_refreshes_a_small_change_and_rebuilds_a_rewrite_in_place(
    project: SmallProject, monkeypatch: pytest.MonkeyPatch
):
    p = project
    # These tables are tiny: a refresh of them is its statements' fixed cost, which the
    # prior counts (`cost.overhead`); this test is of the rest of the rule and counts none.
    monkeypatch.setenv(cost.STATEMENT_SECONDS_ENV, "0")
    _write(p, "agg", "auto", AGG_SQL)
    (p.root / "models" / "over.sql").write_text(_config("incremental") + OVER_SQL)
    built = _message(p, "agg", "over")
    assert built["agg"].startswith("built"), built
    _equal(p, "agg", AGG_SQL)

    p.sql(f"INSERT INTO {SCHEMA}.base VALUES ('a', 1000)")
    small = _message(p, "agg", "over")
    # The first refresh has only the build's time to go by: 1/11 of the bytes is cheap.
    assert small["agg"].startswith("refreshed"), small
    _equal(p, "agg", AGG_SQL)
    _equal(p, "over", OVER_PLAIN)

    # Every row rewritten (copy-on-write: every file replaced): the refresh timed at one row
    # scales to far more than the build took.
    p.sql(f"UPDATE {SCHEMA}.base SET x = x + 1")
    before = _snapshots(p, "agg__ivm_state")
    rewrite = _message(p, "agg", "over")
    assert rewrite["agg"].startswith("rebuilt in place"), rewrite
    assert "est. refresh" in rewrite["agg"] and "rebuild" in rewrite["agg"], rewrite
    assert "ivm_policy.base's bytes" in rewrite["agg"], rewrite
    _equal(p, "agg", AGG_SQL)
    # In place: one more commit to the same state table, the view never dropped.
    assert _snapshots(p, "agg__ivm_state") == before + 1
    assert _is_view(p, "agg")
    # The ivm model over it read the overwrite as its change (no delta-log entry for it).
    assert rewrite["over"].startswith("refreshed"), rewrite
    _equal(p, "over", OVER_PLAIN)

    # And refreshes again afterwards, exactly.
    p.sql(f"DELETE FROM {SCHEMA}.base WHERE x = 1001")
    after = _message(p, "agg", "over")
    assert after["agg"].startswith(("refreshed", "rebuilt in place")), after
    _equal(p, "agg", AGG_SQL)
    _equal(p, "over", OVER_PLAIN)
    assert p.dbt("test", "--select", "agg").success


def test_auto_counts_the_statements_a_refresh_would_run_before_any_was_timed(
    project: SmallProject, monkeypatch: pytest.MonkeyPatch
):
    """Before a refresh is timed, the estimate of one is its statements' fixed cost (a
    capture per changed input, the delta, the commit) plus its share of the rebuild: where
    the statements cost more than the rebuild, a one-row change is rebuilt in place."""
    p = project
    _write(p, "prior", "auto", AGG_SQL.replace("max(x) as mx", "min(x) as mn"))
    assert _message(p, "prior")["prior"].startswith("built")
    monkeypatch.setenv(cost.STATEMENT_SECONDS_ENV, "60")
    p.sql(f"INSERT INTO {SCHEMA}.base VALUES ('a', 2000)")
    done = _message(p, "prior")["prior"]
    # one changed input: its capture and checkpoint, the delta, the commit; and its share
    assert done.startswith("rebuilt in place"), done
    found = re.search(r"est\. refresh ([0-9.]+) s \(no refresh timed yet\)", done)
    assert found and float(found.group(1)) >= 4 * 60, done
    _equal(p, "prior", AGG_SQL.replace("max(x) as mx", "min(x) as mn"))
    monkeypatch.setenv(cost.STATEMENT_SECONDS_ENV, "soon")
    p.sql(f"INSERT INTO {SCHEMA}.base VALUES ('b', 2001)")
    failed = p.dbt("run", "--select", "prior")
    said = [str(r.message) for r in failed.result.results] if failed.result else []
    assert not failed.success, said
    assert any("DBT_SPARK_IVM_STATEMENT_SECONDS = 'soon' is not a number" in m for m in said)
    monkeypatch.delenv(cost.STATEMENT_SECONDS_ENV)  # and the next run is exact
    assert _message(p, "prior")["prior"].startswith(("refreshed", "rebuilt in place"))
    _equal(p, "prior", AGG_SQL.replace("max(x) as mx", "min(x) as mn"))


def test_full_rebuilds_each_changed_run_in_place_sub_query_states_too(project: SmallProject):
    p = project
    _write(p, "staged", "full", STAGED_SQL)
    assert _message(p, "staged")["staged"].startswith("built")
    _equal(p, "staged", STAGED_SQL)
    sub_state = "staged__ivm_s0__ivm_state"
    written = _snapshots(p, sub_state)
    for change in (
        f"INSERT INTO {SCHEMA}.base VALUES ('e', 1), ('e', 2), ('e', 3), ('e', 4)",
        f"DELETE FROM {SCHEMA}.base WHERE k = 'e' AND x = 2",
    ):
        p.sql(change)
        message = _message(p, "staged")["staged"]
        # The sub-query state would be rebuilt: the model's state is rebuilt past it, from
        # the base table, in one statement, and the sub-query state is left as it was.
        assert message.startswith(
            f"rebuilt in place (its sub-query state {SCHEMA}.staged__ivm_s0 would be rebuilt "
            "(ivm_refresh='full'"
        ), message
        assert "rebuilt from the base tables past it" in message, message
        # A bag past every earlier state: by its own SQL (`from_bases.whole_bag`).
        assert "state rows, computed by its own SQL;" in message, message
        assert (
            f"state {SCHEMA}.staged__ivm_s0: left as it was (the model's state reads past"
            in message
        ), message
        assert _snapshots(p, sub_state) == written
        _equal(p, "staged", STAGED_SQL)
        assert _is_view(p, "staged")
    assert _message(p, "staged")["staged"].startswith("no MERGE")  # nothing changed

    # A failure just before that rebuild's commit leaves the relation and the next run exact.
    before = p.bag(f"SELECT * FROM {SCHEMA}.staged")
    p.sql(f"INSERT INTO {SCHEMA}.base VALUES ('e', 6), ('b', 7)")
    os.environ[FAIL_ENV] = REBUILD_STEP
    try:
        assert not p.dbt("run", "--select", "staged").success
    finally:
        del os.environ[FAIL_ENV]
    assert p.bag(f"SELECT * FROM {SCHEMA}.staged") == before
    assert "rebuilt from the base tables past it" in _message(p, "staged")["staged"]
    _equal(p, "staged", STAGED_SQL)

    # Refreshed again: the sub-query state catches up, then the model's state is rebuilt
    # from it (its watermarks of the sub-query state's table are of a table it did not
    # read), and refreshed from the next change on.
    _write(p, "staged", "incremental", STAGED_SQL)
    p.sql(f"INSERT INTO {SCHEMA}.base VALUES ('e', 5), ('a', 99)")
    message = _message(p, "staged")["staged"]
    assert message.startswith(
        "rebuilt in place (it was rebuilt from the base tables past its earlier states"
    ), message
    assert f"state {SCHEMA}.staged__ivm_s0: refreshed" in message, message
    assert _snapshots(p, sub_state) > written
    _equal(p, "staged", STAGED_SQL)
    p.sql(f"DELETE FROM {SCHEMA}.base WHERE k = 'e' AND x = 5")
    message = _message(p, "staged")["staged"]
    assert message.startswith("refreshed"), message
    _equal(p, "staged", STAGED_SQL)


def test_a_model_with_sub_query_states_sees_no_change_only_where_none_has_one(
    project: SmallProject,
):
    p = project
    p.base_table("side", "k string", "('a')", "('b')")
    _write(p, "nested", "incremental", NESTED_SQL)
    assert _message(p, "nested")["nested"].startswith("built")
    states = ("nested__ivm_s0__ivm_state", "nested__ivm_state")
    written = [_snapshots(p, state) for state in states]
    # Nothing changed: said from the states' metadata rows (`unchanged.py`), no commit.
    message = _message(p, "nested")["nested"]
    assert message == (
        f"no MERGE: no base table changed ({SCHEMA}.base: 0 delta rows, "
        f"{SCHEMA}.side: 0 delta rows)"
    ), message
    assert [_snapshots(p, state) for state in states] == written
    # The same SQL reformatted (the states' digests are of its canonical form) is the same.
    reformatted = NESTED_SQL.replace("select", "SELECT").replace(" from ", "\n  FROM ")
    _write(p, "nested", "incremental", reformatted.replace("where", "-- note\nWHERE"))
    assert _message(p, "nested")["nested"] == message
    _write(p, "nested", "incremental", NESTED_SQL)
    # A change of a table only the sub-query state reads reaches the model.
    p.sql(f"INSERT INTO {SCHEMA}.side VALUES ('c')")
    message = _message(p, "nested")["nested"]
    assert message.startswith("refreshed"), message
    _equal(p, "nested", NESTED_SQL)
    # A failure after the sub-query state's commit, before the model's: the model's state
    # is behind its input, though no base table moved since: the next run applies it.
    p.sql(f"INSERT INTO {SCHEMA}.side VALUES ('d')")
    os.environ[FAIL_ENV] = "commit"
    try:
        assert not p.dbt("run", "--select", "nested").success
    finally:
        del os.environ[FAIL_ENV]
    message = _message(p, "nested")["nested"]
    assert message.startswith("refreshed"), message
    _equal(p, "nested", NESTED_SQL)
    assert _message(p, "nested")["nested"].startswith("no MERGE: no base table changed")
    # Rebuilt past its sub-query state (`full`), the model's state reflects `side` at the
    # snapshot it pinned, its sub-query state left behind: unchanged until `side` moves.
    _write(p, "nested", "full", NESTED_SQL)
    for change in (
        f"DELETE FROM {SCHEMA}.side WHERE k = 'a'",
        f"INSERT INTO {SCHEMA}.side VALUES ('a')",
    ):
        p.sql(change)
        message = _message(p, "nested")["nested"]
        assert "rebuilt from the base tables past it" in message, message
        _equal(p, "nested", NESTED_SQL)
        assert _message(p, "nested")["nested"].startswith("no MERGE: no base table changed")


def _steps(p: SmallProject, model: str) -> list[str]:
    """The labels of the statements a run of `model` timed (`DBT_SPARK_IVM_TIMINGS`)."""
    lines: list[str] = []
    os.environ[TIMINGS_ENV] = "1"
    try:
        keep = [lambda e: lines.append(str(getattr(e.info, "msg", "")))]
        assert p.dbt("run", "--select", model, callbacks=keep).success
    finally:
        del os.environ[TIMINGS_ENV]
    found = [STEP_LINE.search(line) for line in lines]
    return [m["label"] for m in found if m is not None and m["model"] == model]


@contextmanager
def _heads_reads() -> Iterator[list[list[str]]]:
    """The relations whose heads the runs read, grouped between the statements they ran."""
    executor = ConnectionExecutor
    read, execute = executor.iceberg_heads, executor.execute
    between: list[list[str]] = [[]]

    def heads(self: ConnectionExecutor, relations: Sequence[str]) -> Any:
        between[-1].extend(relations)
        return read(self, relations)

    def run(self: ConnectionExecutor, statement: str) -> None:
        between.append([])
        execute(self, statement)

    executor.iceberg_heads, executor.execute = heads, run  # type: ignore[method-assign]
    try:
        yield between
    finally:
        executor.iceberg_heads, executor.execute = read, execute  # type: ignore[method-assign]


def test_states_past_the_deferred_one_are_planned_from_their_recorded_facts(
    project: SmallProject,
):
    """Rebuilt past two sub-query states, the one after the state that would rebuild is
    planned from the facts its last commit recorded (no DESCRIBE QUERY), and from Spark's
    where a base's schema changed since: the relation is exact either way. Each table's
    head is read once between two statements of the run (`session.HeadsRead`)."""
    p = project
    p.base_table("pairs", "k string, w int", "('a', 1)", "('b', 2)", "('e', 3)", "(NULL, 4)")
    two = (
        f"select k, x from {SCHEMA}.base where k in (select k from {SCHEMA}.pairs where k in "
        f"(select k from {SCHEMA}.base group by k having count(*) > 3))"
    )
    _write(p, "two", "full", two)
    assert _message(p, "two")["two"].startswith("built")
    for change, planned_by in (
        (f"INSERT INTO {SCHEMA}.base VALUES ('e', 11), ('e', 12), ('e', 13)", "recorded"),
        (f"ALTER TABLE {SCHEMA}.pairs ADD COLUMNS (note string)", None),
        (f"INSERT INTO {SCHEMA}.base VALUES ('b', 14), (NULL, 15)", "describe"),
        # Left as it was, s2's row records the schema it was built over until it runs again.
        (f"DELETE FROM {SCHEMA}.base WHERE k = 'e' AND x > 12", "describe"),
    ):
        p.sql(change)
        if planned_by is None:  # the schema change alone: a change of no row of the model
            continue
        with _heads_reads() as between:
            steps = _steps(p, "two")
        # The no-change check, the deferred state's run, the plans past it and the pins
        # share one read of each head until the run's first statement.
        assert any(between), "no head read"
        assert all(len(read) == len(set(read)) for read in between), between
        # s0 would rebuild (`full`); the states after it are planned past it, unrun, and the
        # model's state is rebuilt from the bases. `pairs` is read by the last of them.
        assert not [s for s in steps if s.startswith("s") and s.endswith("build state")]
        assert "s1 meta" in steps and "s2 meta" in steps, steps
        assert ("s2 describe query" in steps) == (planned_by == "describe"), steps
        assert "s1 describe query" not in steps, steps
        _equal(p, "two", two)


def test_a_failure_before_the_rebuilds_commit_keeps_the_relation(project: SmallProject):
    p = project
    _write(p, "agg", "full", AGG_SQL)
    p.run("--select", "agg")
    _equal(p, "agg", AGG_SQL)
    before = p.bag(f"SELECT * FROM {SCHEMA}.agg")

    p.sql(f"INSERT INTO {SCHEMA}.base VALUES ('f', 7), (NULL, NULL)")
    os.environ[FAIL_ENV] = REBUILD_STEP
    try:
        result = p.dbt("run", "--select", "agg")
    finally:
        del os.environ[FAIL_ENV]
    assert not result.success, "the injected failure did not fail the run"
    assert p.bag(f"SELECT * FROM {SCHEMA}.agg") == before
    assert p.run("--select", "agg")["agg"].startswith("rebuilt in place")
    _equal(p, "agg", AGG_SQL)


def test_the_history_shows_each_runs_rows_and_snapshots(project: SmallProject):
    p = project
    p.base_table("events", "k string, x int", "('a', 1)", "('a', 2)", "('b', 3)")
    # `incremental`: runs are timed under every policy, not only `auto`.
    _write(p, "events_by_k", "incremental", EVENTS_SQL)
    assert _message(p, "events_by_k")["events_by_k"].startswith("built")
    heads = [_current(p, "events")]
    p.sql(f"INSERT INTO {SCHEMA}.events VALUES ('a', 4), ('c', 5)")
    assert "state rows +1 ~1 -0" in _message(p, "events_by_k")["events_by_k"]
    _equal(p, "events_by_k", EVENTS_SQL)
    heads.append(_current(p, "events"))
    p.sql(f"UPDATE {SCHEMA}.events SET x = x + 10 WHERE k = 'b'")
    p.sql(f"DELETE FROM {SCHEMA}.events WHERE k = 'c'")
    assert "state rows +0 ~1 -1" in _message(p, "events_by_k")["events_by_k"]
    _equal(p, "events_by_k", EVENTS_SQL)
    heads.append(_current(p, "events"))

    runs = p.sql(_history_query(f"{SCHEMA}.events_by_k__ivm_state"))
    # A build's rows are counted by the next run, where the JVM reads the state's summary.
    built = (2, 0, 0) if p.target == SESSION else (None, None, None)
    want = [("build", built), ("refresh", (1, 1, 0)), ("refresh", (0, 1, 1))]
    assert [(r[1], tuple(r[3:6])) for r in runs] == want, runs
    assert [dict(r[6]) for r in runs] == [{f"{SCHEMA}.events": h} for h in heads], runs
    # Each run's seconds are known once the next run reads the state's last commit.
    assert [r[2] is not None for r in runs] == [True, True, False], runs
    assert [r[0] for r in runs] == sorted(r[0] for r in runs), runs

    ok, printed = p.operation("ivm_explain", "{model: events_by_k}")
    assert ok, printed
    lines = [line.strip() for line in printed]
    at = lines.index("runs (UTC, oldest first):")
    shown = lines[at + 1 : at + 4]
    assert [line.split()[2] for line in shown] == ["build", "refresh", "refresh"], shown
    for line, rows, head in zip(shown, ["+2 ~0 -0", "+1 ~1 -0", "+0 ~1 -1"], heads):
        assert f"rows {rows}" in line and line.endswith(f"snapshots {SCHEMA}.events {head}"), line


#: How long the test holds a refresh before it finds that it must rebuild (seconds).
HELD_S = 5.0


def _resume_after(paused: Path, resume: Path) -> None:
    """Let a run held at a failpoint go on `HELD_S` seconds after it paused."""
    deadline = time.monotonic() + 300
    while not paused.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(HELD_S)
    resume.write_text("go")


EXTREMES_SQL = (
    f"select k, count(*) as n, min(x) as lo, max(x) as hi from {SCHEMA}.spread group by k"
)


def test_auto_rebuilds_in_place_rather_than_recompute_a_value_list(
    project: SmallProject, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A delete of a group's maximum makes its MIN/MAX lists recompute from the base table,
    which reads it three times over (`recompute_cost.py`): `auto` rebuilds in place instead,
    `incremental` recomputes; both exact. The history times that rebuild as a rebuild, not
    as the refresh it replaced (the next estimate of a rebuild reads it), and records the
    refresh as one of its change size that cost its run up to the turn plus a rebuild: the
    next such delete is rebuilt at once, by the estimates, without a delta."""
    p = project
    monkeypatch.setenv(cost.STATEMENT_SECONDS_ENV, "0")  # as in the first test of auto
    p.base_table("spread", "k string, x int")
    for batch in range(10):  # ten files: one row's delete rewrites a tenth of the bytes
        rows = ", ".join(f"('{'ab'[i % 2]}', {batch * 10 + i})" for i in range(10))
        p.sql(f"INSERT INTO {SCHEMA}.spread VALUES {rows}")
    _write(p, "extremes", "auto", EXTREMES_SQL)
    _write(p, "extremes_inc", "incremental", EXTREMES_SQL)
    built = _message(p, "extremes", "extremes_inc")
    assert all(m.startswith("built") for m in built.values()), built

    p.sql(f"DELETE FROM {SCHEMA}.spread WHERE x = 98")  # group 'a''s maximum
    # The refresh of `extremes` is held after its delta, before it learns that it must
    # recompute: the rebuild it turns into is timed from its choice, without that wait.
    resume = tmp_path / "resume"
    monkeypatch.setenv(PAUSE_ENV, f"delta:{resume}")
    paused = Path(f"{resume}.extremes.paused")
    threading.Thread(target=_resume_after, args=(paused, resume), daemon=True).start()
    done = _message(p, "extremes")
    monkeypatch.delenv(PAUSE_ENV)
    assert paused.exists(), "the refresh was not held"
    done.update(_message(p, "extremes_inc"))
    assert done["extremes"].startswith(
        "rebuilt in place (the delta asks to recompute 1 group from the base tables, which "
        "reads them 3 times over"
    ), done
    assert "est. recompute" in done["extremes"], done
    assert done["extremes_inc"].startswith("refreshed"), done
    assert "1 groups recomputed" in done["extremes_inc"], done
    for model in ("extremes", "extremes_inc"):
        _equal(p, model, EXTREMES_SQL)
        assert _is_view(p, model)
    # The next run that finds a change times the rebuild by the state's last commit.
    p.sql(f"INSERT INTO {SCHEMA}.spread VALUES ('a', 1)")
    assert not _message(p, "extremes")["extremes"].startswith("built")
    runs = p.sql(_history_query(f"{SCHEMA}.extremes__ivm_state"))
    assert [r[1] for r in runs[:3]] == ["build", "refresh", "rebuild"], runs
    assert runs[1][2] > HELD_S, runs  # the turned refresh: held, then a rebuild's estimate
    assert [r[7] for r in runs[:3]] == [False, True, False], runs  # `turned`
    assert 0 < runs[2][2] < HELD_S, runs  # the rebuild's seconds: not the held refresh's
    # A delete of the other group's maximum rewrites a file as large: rebuilt at once.
    p.sql(f"DELETE FROM {SCHEMA}.spread WHERE x = 99")
    again = _message(p, "extremes")["extremes"]
    assert again.startswith("rebuilt in place (the change's files are"), again
    assert "timed refresh" in again, again
    _equal(p, "extremes", EXTREMES_SQL)


def test_a_large_states_merge_reads_it_by_the_changed_keys(
    project: SmallProject, monkeypatch: pytest.MonkeyPatch
):
    """Where the state is large enough (here: any, by `DBT_SPARK_IVM_MERGE_SCOPE_MIN_ROWS`),
    the refresh collects the delta's keys and its MERGE names them (`merge_scope.py`); the
    relation stays exact, NULL keys and strings that need quoting included; below the size,
    no keys are collected."""
    p = project
    p.base_table("keyed", "k string, d date, x int")
    p.sql(
        f"INSERT INTO {SCHEMA}.keyed VALUES ('a', DATE'2024-01-01', 1), (NULL, NULL, 2), "
        "('it''s', DATE'2024-01-02', 3), ('b', DATE'2024-01-01', 4)"
    )
    select = f"select k, d, count(*) as n, sum(x) as s from {SCHEMA}.keyed group by k, d"
    _write(p, "scoped", "incremental", select)
    assert _message(p, "scoped")["scoped"].startswith("built")
    for scope, rows in (
        ("0", "(NULL, NULL, 5), ('it''s', DATE'2024-01-02', 6), ('c', DATE'2024-01-03', 7)"),
        ("1000000000", "('a', DATE'2024-01-01', 8), (NULL, DATE'2024-01-01', 9)"),
    ):
        monkeypatch.setenv(merge_scope.MIN_ROWS_ENV, scope)
        p.sql(f"INSERT INTO {SCHEMA}.keyed VALUES {rows}")
        p.sql(f"DELETE FROM {SCHEMA}.keyed WHERE x = 4")
        steps = _steps(p, "scoped")
        assert ("merge scope" in steps) == (scope == "0"), steps
        _equal(p, "scoped", select)
