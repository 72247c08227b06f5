"""State upkeep: refreshes compact the state table and expire its old snapshots, and stay exact.

Two models (a grouped aggregate; a DISTINCT over a join) are refreshed 10 times after small
random changes of their Iceberg base tables (inserts, updates, deletes, NULLs, duplicates),
one `dbt run` per round. After every run each relation equals a fresh run of its SQL (as bags)
and its state table's live delete files stay under the compaction threshold; its live data
files and its snapshots stay bounded too, and each state was seen compacted (its live delete
files fell) and expired (its snapshots fell) at least once. The thresholds are lowered for
the refresh test (`THRESHOLDS`: the same rules, due sooner, so that 10 refreshes exercise what
the defaults reach after 16): without upkeep a state would hold more than EXPIRE_AT + 1
snapshots and DELETE_FILE_THRESHOLD delete files by then. An upkeep that fails leaves the run successful and the relation exact
(the failure is injected by making the CALL fail on Spark). Every state's metadata files stay
bounded too (`sql/layout.BOUNDED_METADATA`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest
from dbt.cli.main import dbtRunner, dbtRunnerResult
from support.small_project import SmallProject

from dbt.adapters.spark_ivm.compiler.runtime import cost, upkeep
from dbt.adapters.spark_ivm.compiler.sql import state_table
from dbt.adapters.spark_ivm.compiler.sql.layout import METADATA_VERSIONS

SCHEMA = "ivm_upkeep"
ROUNDS = 10
#: upkeep's thresholds in the refresh test (defaults 8, 16, 16, 5).
THRESHOLDS = {"DELETE_FILE_THRESHOLD": 3, "DATA_FILE_SLACK": 6, "EXPIRE_AT": 7, "RETAIN_LAST": 2}
MODELS = {
    "agg": (
        "select k, count(*) as n, count(x) as nx, sum(x) as s, min(x) as mn, max(x) as mx "
        f"from {SCHEMA}.facts group by k"
    ),
    "dj": (
        f"select distinct f.k, d.label, f.x from {SCHEMA}.facts f "
        f"join {SCHEMA}.dims d on f.k = d.k where f.x is null or f.x < 6"
    ),
}
KEYS = ["'a'", "'b'", "'c'", "'d'", "NULL"]


def _value(rnd: random.Random) -> str:
    return "NULL" if rnd.random() < 0.15 else str(rnd.randint(-3, 9))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> SmallProject:
    p = SmallProject(tmp_path_factory.mktemp("upkeep"), "upkeep", SCHEMA)
    for name, select in MODELS.items():
        p.model(name, select)
    p.start_spark()
    p.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    for t in ("facts", "dims"):
        p.sql(f"DROP TABLE IF EXISTS {SCHEMA}.{t}")
    p.sql(f"CREATE TABLE {SCHEMA}.facts (id int, k string, x int) USING iceberg")
    p.sql(f"CREATE TABLE {SCHEMA}.dims (id int, k string, label string) USING iceberg")
    rnd = random.Random(7)
    rows = ", ".join(f"({i}, {rnd.choice(KEYS)}, {_value(rnd)})" for i in range(40))
    p.sql(f"INSERT INTO {SCHEMA}.facts VALUES {rows}")
    p.sql(
        f"INSERT INTO {SCHEMA}.dims VALUES (0, 'a', 'x'), (1, 'b', 'y'), (2, 'c', NULL), "
        "(3, 'a', 'x'), (4, NULL, 'z')"
    )
    assert p.dbt("run").success
    return p


def _merge_changes(p: SmallProject, rnd: random.Random, table: str, columns: str, row) -> None:
    """One MERGE into a base table: a few deletes, updates and inserts (by id)."""
    ids = [int(r[0]) for r in p.sql(f"SELECT id FROM {SCHEMA}.{table}")]
    top = max(ids, default=0) + 1
    changes = []
    for i in rnd.sample(ids, min(len(ids), rnd.randint(1, 3))):
        op = rnd.choice(["d", "u"])
        changes.append(f"({i}, '{op}', {row(rnd)})")
    for n in range(rnd.randint(0, 3)):
        changes.append(f"({top + n}, 'i', {row(rnd)})")
    if rnd.random() < 0.3:  # the same row twice, under two new ids
        values = row(rnd)
        changes += [f"({top + 3}, 'i', {values})", f"({top + 4}, 'i', {values})"]
    names = columns.split(", ")
    p.sql(
        f"MERGE INTO {SCHEMA}.{table} t USING (SELECT * FROM VALUES {', '.join(changes)} "
        f"AS v(id, op, {columns})) s ON t.id = s.id "
        "WHEN MATCHED AND s.op = 'd' THEN DELETE "
        f"WHEN MATCHED THEN UPDATE SET {', '.join(f't.{c} = s.{c}' for c in names)} "
        f"WHEN NOT MATCHED THEN INSERT (id, {columns}) "
        f"VALUES (s.id, {', '.join(f's.{c}' for c in names)})"
    )


def _change(p: SmallProject, rnd: random.Random) -> None:
    _merge_changes(p, rnd, "facts", "k, x", lambda r: f"{r.choice(KEYS)}, {_value(r)}")
    if rnd.random() < 0.35:
        labels = ["'x'", "'y'", "'z'", "NULL"]
        _merge_changes(
            p, rnd, "dims", "k, label", lambda r: f"{r.choice(KEYS)}, {r.choice(labels)}"
        )


def _files(p: SmallProject, model: str) -> dict[str, int]:
    """Live data and delete files of the model's state table, its snapshots, and the
    metadata files in its folder (a local warehouse, in session mode as through thrift)."""
    state = f"{SCHEMA}.{model}__ivm_state"
    counts = dict(p.sql(f"SELECT content, count(*) FROM {state}.files GROUP BY content"))
    (snapshots,) = p.sql(f"SELECT count(*) FROM {state}.snapshots")[0]
    location = _location(p, state)
    return {
        "data": int(counts.get(0, 0)),
        "deletes": int(counts.get(1, 0)) + int(counts.get(2, 0)),
        "snapshots": int(snapshots),
        "metadata": len(list((location / "metadata").glob("*.metadata.json"))),
    }


def _assert_refreshed(result: dbtRunnerResult, where: str) -> None:
    """Every model was refreshed incrementally (a rebuild would make the counts vacuous)."""
    messages = [str(r.message) for r in result.result.results]  # type: ignore[union-attr]
    assert len(messages) == len(MODELS), messages
    assert all(m.startswith(("refreshed", "no MERGE")) for m in messages), (where, messages)
    # run_results.json says the same: mode, and the state rows the MERGE wrote
    for r in result.result.results:  # type: ignore[union-attr]
        response = r.adapter_response
        refreshed = str(r.message).startswith("refreshed")
        assert response["mode"] == ("refresh" if refreshed else "no change"), (where, response)
        counts = [response[f"rows_{k}"] for k in ("inserted", "updated", "deleted")]
        assert response["rows_affected"] == sum(counts), (where, response)
        assert (sum(counts) > 0) == refreshed, (where, response)
        if refreshed and "window partitions" not in str(r.message):
            assert f"+{counts[0]} ~{counts[1]} -{counts[2]}" in str(r.message), (where, response)


def _location(p: SmallProject, table: str) -> Path:
    """The table's folder (a local warehouse)."""
    details = {str(r[0]).strip(): str(r[1]) for r in p.sql(f"DESCRIBE TABLE EXTENDED {table}")}
    return Path(details["Location"].removeprefix("file:"))


def _unreferenced(p: SmallProject, model: str) -> list[str]:
    """Files in the state's data folder that no snapshot it keeps references: an expiry
    that dropped snapshots but not the files only they held leaves these behind."""
    state = f"{SCHEMA}.{model}__ivm_state"
    data = _location(p, state) / "data"
    kept = {
        str(r[0]).removeprefix("file:") for r in p.sql(f"SELECT file_path FROM {state}.all_files")
    }
    on_disk = {str(f) for f in data.rglob("*") if f.is_file() and not f.name.startswith(".")}
    return sorted(on_disk - kept)


def _assert_exact(p: SmallProject, where: str) -> None:
    for name, select in MODELS.items():
        assert p.bag(f"SELECT * FROM {SCHEMA}.{name}") == p.bag(select), f"{name} {where}"


def test_refreshes_keep_state_files_and_snapshots_bounded(
    project: SmallProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = project
    for name, value in THRESHOLDS.items():
        monkeypatch.setattr(upkeep, name, value)
    rnd = random.Random(1)
    peak = {name: {"data": 0, "deletes": 0, "snapshots": 0, "metadata": 0} for name in MODELS}
    last = {name: _files(p, name) for name in MODELS}
    # Rounds after which a state held fewer delete files / snapshots than before the round.
    fell: dict[str, dict[str, list[int]]] = {n: {"deletes": [], "snapshots": []} for n in MODELS}
    messages: list[str] = []
    dbt = _dbt_capturing(p, messages)
    for i in range(ROUNDS):
        _change(p, rnd)
        result = dbt("run")
        assert result.success, f"round {i}"
        failed = [m for m in messages if "upkeep of" in m and "failed" in m]
        assert not failed, f"round {i}: {failed}"
        _assert_refreshed(result, f"round {i}")
        _assert_exact(p, f"after round {i}")
        for name in MODELS:
            files = _files(p, name)
            peak[name] = {k: max(v, files[k]) for k, v in peak[name].items()}
            for k in ("deletes", "snapshots"):
                if files[k] < last[name][k]:
                    fell[name][k].append(i)
            if files["data"] < last[name]["data"]:
                # Compacted: no delete file outlives the data files it pointed at (the
                # MIN/MAX lists of `agg` are array columns, apache/iceberg#15080).
                assert files["deletes"] == 0, (name, i, files)
            last[name] = files
            assert files["deletes"] < upkeep.DELETE_FILE_THRESHOLD, (name, i, files)
    for name in MODELS:
        print(
            f"{name} after {ROUNDS} refreshes: {last[name]}, peak {peak[name]}, fell {fell[name]}"
        )
        # Without compaction and expiry there would be about ROUNDS of each (ROUNDS > 8):
        # expiry keeps at most EXPIRE_AT - 1 snapshots plus a compaction's two.
        assert peak[name]["data"] <= upkeep.DATA_FILE_SLACK, (name, peak[name])
        assert peak[name]["snapshots"] <= upkeep.EXPIRE_AT + 1, (name, peak[name])
        # Iceberg keeps METADATA_VERSIONS previous metadata files and the current one;
        # without BOUNDED_METADATA every commit's file stays (more than 12 by now).
        assert peak[name]["metadata"] <= METADATA_VERSIONS + 1, (name, peak[name])
        # The bounds held because upkeep ran, not because too few refreshes committed.
        assert fell[name]["deletes"], (name, "never compacted", peak[name])
        assert fell[name]["snapshots"], (name, "never expired", peak[name])
        assert not _unreferenced(p, name), name


def _dbt_capturing(p: SmallProject, messages: list[str]) -> Callable[..., dbtRunnerResult]:
    """dbt in-process like `p.dbt`, appending every log message to `messages`."""
    runner = dbtRunner(callbacks=[lambda event: messages.append(str(event.info.msg))])

    def invoke(*args: str) -> dbtRunnerResult:
        return runner.invoke([*args, "--project-dir", str(p.root), "--profiles-dir", str(p.root)])

    return invoke


def test_failed_upkeep_keeps_run_successful_and_relation_exact(
    project: SmallProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = project
    before = {name: _files(p, name) for name in MODELS}
    # Upkeep is due on every refresh, and its first CALL fails on Spark (no such table).
    monkeypatch.setattr(upkeep, "needs_compaction", lambda stats: True)
    monkeypatch.setattr(
        upkeep,
        "compaction_sqls",
        lambda state, version="3": [
            f"CALL system.rewrite_data_files(table => '{SCHEMA}.no_such_table')"
        ],
    )
    messages: list[str] = []
    dbt = _dbt_capturing(p, messages)
    rnd = random.Random(99)
    for i in range(2):
        _change(p, rnd)
        result = dbt("run")
        assert result.success, f"a failed upkeep failed the run (round {i})"
        _assert_refreshed(result, f"failing upkeep, round {i}")
        _assert_exact(p, f"after a failed upkeep (round {i})")
    failures = [m for m in messages if "upkeep of" in m and "failed" in m]
    assert len(failures) >= len(MODELS), messages[-20:]
    for name in MODELS:
        after = _files(p, name)
        # Nothing was compacted or expired, and the refreshes did commit.
        assert after["snapshots"] > before[name]["snapshots"], (name, before[name], after)
        # It cannot recur unseen: each warning counts the failures in a row, and
        # ivm_explain shows them with the error.
        state = f"{SCHEMA}.{name}__ivm_state"
        said = [m for m in failures if f"upkeep of {state} failed" in m]
        assert [m.split(" in a row")[0][-2:] for m in said] == ["(1", "(2"], said
        assert (
            _upkeep_line(p, name)
            == (
                "upkeep: failed 2 time(s) in a row, the state is neither compacted nor expired "
                f"until it works; last error: {said[-1].split('retries: ')[1][:60]}"
            )[:150]
        ), name
    # The failure is dbt's warning event: `--warn-error` fails the run on it (the refresh
    # itself committed before its upkeep, so the relation is still exact).
    _change(p, rnd)
    strict = dbt("--warn-error", "run")
    assert not strict.success, "--warn-error did not fail on a failed upkeep"
    _assert_exact(p, "after a failed upkeep under --warn-error")

    monkeypatch.undo()
    # Upkeep works again, and is due: the count goes.
    monkeypatch.setattr(upkeep, "needs_compaction", lambda stats: True)
    _change(p, rnd)
    assert p.dbt("run").success
    _assert_exact(p, "after upkeep works again")
    for name in MODELS:
        assert _upkeep_line(p, name) is None, name
        props = dict(p.sql(f"SHOW TBLPROPERTIES {SCHEMA}.{name}__ivm_state"))
        assert upkeep.FAILURES not in props and upkeep.LAST_ERROR not in props, props


def _upkeep_line(p: SmallProject, model: str) -> str | None:
    """The `upkeep:` line of the model's `ivm_explain` (first 150 characters), or None."""
    ok, lines = p.operation("ivm_explain", f"{{model: {model}}}")
    assert ok, lines
    found = [ln.strip() for ln in "\n".join(lines).splitlines() if ln.strip().startswith("upkeep:")]
    assert len(found) <= 1, found
    return found[0][:150] if found else None


def test_a_state_rebuilt_every_run_keeps_its_snapshots_bounded(
    project: SmallProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model rebuilt in place on every run (`ivm_refresh: full` here; under `auto`, a change
    that rewrites most of its inputs' files, as every copy-on-write change of a one-file
    table does) gets its upkeep too. Before, only a refresh ran it: a 300-round soak at SF
    0.01 left each state with one more snapshot per round (50 after 40 rounds)."""
    p = project
    for name, value in THRESHOLDS.items():
        monkeypatch.setattr(upkeep, name, value)
    monkeypatch.setenv(cost.REFRESH_ENV, "full")
    rnd = random.Random(5)
    peak = dict.fromkeys(MODELS, 0)
    for i in range(ROUNDS):
        _change(p, rnd)
        result = p.dbt("run")
        assert result.success, f"round {i}"
        messages = [str(r.message) for r in result.result.results]  # type: ignore[union-attr]
        assert all(m.startswith("rebuilt in place") for m in messages), (i, messages)
        _assert_exact(p, f"after rebuild {i}")
        for name in MODELS:
            files = _files(p, name)
            peak[name] = max(peak[name], files["snapshots"])
            assert files["metadata"] <= METADATA_VERSIONS + 1, (name, i, files)
    # Without upkeep after a rebuild: one more snapshot per round (more than ROUNDS).
    assert all(n <= upkeep.EXPIRE_AT + 1 for n in peak.values()), peak
    # and the files of the rebuilds before went with their snapshots
    for name in MODELS:
        assert not _unreferenced(p, name), name


def _format_version(p: SmallProject, model: str) -> str:
    return dict(p.sql(f"SHOW TBLPROPERTIES {SCHEMA}.{model}__ivm_state"))["format-version"]


def test_a_format_2_state_is_moved_to_format_3_by_its_compaction(
    project: SmallProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A state built by an earlier version (Iceberg format 2, position delete files) is
    compacted by one rewrite into format 3, its MIN/MAX lists and all."""
    p = project
    p.sql(f"DROP VIEW IF EXISTS {SCHEMA}.agg")
    p.sql(f"DROP TABLE IF EXISTS {SCHEMA}.agg__ivm_state PURGE")
    with monkeypatch.context() as legacy:
        legacy.setitem(state_table.STATE_PROPERTIES, "format-version", "2")
        assert p.dbt("run", "--select", "agg").success
    assert _format_version(p, "agg") == "2"
    monkeypatch.setattr(upkeep, "DELETE_FILE_THRESHOLD", 2)
    messages: list[str] = []
    dbt = _dbt_capturing(p, messages)
    rnd = random.Random(5)
    for i in range(8):
        _change(p, rnd)
        assert dbt("run", "--select", "agg").success, f"round {i}"
        assert not [m for m in messages if "upkeep of" in m and "failed" in m], messages[-5:]
        assert p.bag(f"SELECT * FROM {SCHEMA}.agg") == p.bag(MODELS["agg"]), f"round {i}"
        if _format_version(p, "agg") == "3":
            break
    assert _format_version(p, "agg") == "3", "no compaction moved the state to format 3"
    assert _files(p, "agg")["deletes"] == 0, _files(p, "agg")


def test_upkeep_decisions() -> None:
    """The pure part: thresholds and the statements rendered (no Spark)."""
    small = upkeep.StateStats(3, 2, 1, 5_000, "2026-01-02 03:04:05.678")
    assert upkeep.statements("db.m__ivm_state", small) == []
    deletes = upkeep.StateStats(9, 9, upkeep.DELETE_FILE_THRESHOLD, 5_000, small.committed_at)
    labels = [label for label, _ in upkeep.statements("db.m__ivm_state", deletes)]
    assert labels == ["compact"]  # format 3: the deletion vectors go with their data files
    # A format 2 state (built by an earlier version) is moved to format 3 by a rewrite.
    legacy = upkeep.statements("db.m__ivm_state", deletes, "2")
    assert [s.split(" ")[0] for _, s in legacy] == ["ALTER", "INSERT"]
    many_data = upkeep.StateStats(9, upkeep.DATA_FILE_SLACK + 1, 0, 5_000, small.committed_at)
    assert upkeep.needs_compaction(many_data)
    big = upkeep.StateStats(9, upkeep.DATA_FILE_SLACK + 1, 0, 40 * upkeep.TARGET_FILE_BYTES, None)
    assert not upkeep.needs_compaction(big)  # 40 full-size files are what those bytes need
    old = upkeep.StateStats(upkeep.EXPIRE_AT, 2, 0, 5_000, small.committed_at)
    (only,) = upkeep.statements("db.m__ivm_state", old)
    assert only == (
        "expire",
        (
            "CALL system.expire_snapshots(table => 'db.m__ivm_state', "
            "older_than => TIMESTAMP '2026-01-02 03:04:05.678', retain_last => 5)"
        ),
    )
    unknown = upkeep.StateStats(upkeep.EXPIRE_AT, None, None, None, small.committed_at)
    assert [label for label, _ in upkeep.statements("db.m", unknown)] == ["compact", "expire"]
    for version in ("2", "3"):
        for statement in upkeep.compaction_sqls("db.m__ivm_state", version):
            assert "db" in statement and "m__ivm_state" in statement
    with pytest.raises(ValueError):
        upkeep.expire_sql("db.m", "now'); DROP TABLE x; --")
    assert upkeep.parse_stats((4, "3", None, 10, "t")) == upkeep.StateStats(4, 3, None, 10, "t")
    # Read without Spark (session method): nothing is due unless the SQL path could find
    # something due, whatever the commit time it does not know.
    summary = {"total-data-files": "3", "total-delete-files": "1", "total-files-size": "900"}
    assert upkeep.from_summary(4, summary) == upkeep.StateStats(4, 3, 1, 900, None)
    assert not upkeep.may_be_due(upkeep.from_summary(4, summary))
    assert upkeep.may_be_due(upkeep.from_summary(upkeep.EXPIRE_AT, summary))
    many_deletes = {**summary, "total-delete-files": str(upkeep.DELETE_FILE_THRESHOLD)}
    assert upkeep.may_be_due(upkeep.from_summary(4, many_deletes))
    assert not upkeep.may_be_due(upkeep.from_summary(4, {}))
    assert upkeep.may_be_due(upkeep.from_summary(upkeep.EXPIRE_AT, {}))


def test_upkeep_never_names_a_base_table() -> None:
    """Every statement upkeep renders is about the state table it was given."""
    stats = upkeep.StateStats(upkeep.EXPIRE_AT, 99, 99, 1, "2026-01-02 03:04:05")
    for _, statement in upkeep.statements("s.m__ivm_state", stats):
        assert "table => 's.m__ivm_state'" in statement
    for _, statement in upkeep.statements("s.m__ivm_state", stats, "2"):
        named = statement.replace("`s`.`m__ivm_state`", "").replace("'s.m__ivm_state'", "")
        assert named != statement and "m__ivm_state" not in named and "`" not in named, statement
