"""The refresh-or-rebuild choice (`runtime/cost.py`) without Spark: the history it keeps, the
change it reads from snapshot summaries, and what each policy picks."""

from __future__ import annotations

from dbt.adapters.spark_ivm.compiler.capture import Snapshot
from dbt.adapters.spark_ivm.compiler.runtime import cost, run_history
from dbt.adapters.spark_ivm.compiler.runtime.base_tables import BaseRecord, TableMetadata


def _table(*snapshots: Snapshot) -> TableMetadata:
    return TableMetadata("m.json", "u", 0, {}, {s.snapshot_id: s for s in snapshots})


def test_the_history_keeps_the_last_runs_and_survives_damage() -> None:
    runs = [run_history.Run("refresh", n, 1.0, n, 100) for n in range(run_history.KEEP)]
    kept = run_history.remembered(runs, run_history.Run("refresh", 99, None, 5, 100))
    assert (
        len(kept) == run_history.KEEP
        and kept[-1]["started_ms"] == 99
        and kept[0]["started_ms"] == 1
    )
    recorded = {"runs": [*kept, {"mode": "refresh"}, "junk"]}  # edited by hand
    assert [r.started_ms for r in run_history.history(recorded)] == [r["started_ms"] for r in kept]
    assert run_history.history({}) == [] and run_history.history({"runs": "x"}) == []


def test_the_rows_and_snapshots_a_run_records_are_additive_keys() -> None:
    old = {"mode": "refresh", "started_ms": 7, "seconds": 1.5, "change": 10, "inputs": 90}
    run = run_history.Run("refresh", 7, 1.5, 10, 90, (1, 2, 3), (("db.t", 41),))
    # what a version before them reads of a record with them is all there, unchanged
    assert {k: run.json()[k] for k in old} == old
    # a record without them reads as not known; one damaged there keeps the rest
    assert run_history.Run.parse(old) == run_history.Run("refresh", 7, 1.5, 10, 90)
    assert run_history.Run.parse(
        {**old, "inserted": "x", "snapshots": [1]}
    ) == run_history.Run.parse(old)
    # the bound holds with them: the last build and the last `KEEP` runs
    runs = [run_history.Run("build", 0, 1.0, rows=(4, 0, 0))] + [run] * run_history.KEEP
    kept = run_history.remembered(runs, run)
    assert len(kept) == run_history.KEEP + 1 and kept[0]["inserted"] == 4
    assert run_history.history({"runs": kept})[-1] == run


def test_the_change_is_the_bytes_its_commits_added_and_removed() -> None:
    base = _table(
        Snapshot(1, None, 0, "append", 100, 0, 100),
        Snapshot(2, 1, 0, "append", 10, 0, 110),
        Snapshot(3, 2, 0, "overwrite", 50, 40, 120),  # a copy-on-write update
    )
    found = cost.changes({"db.t": base}, {"db.t": 1}, {"db.t": 3})
    assert found == [cost.Change("db.t", 100, 120)]
    # a watermark the head does not descend from (a rollback): no estimate, the capture decides
    assert cost.changes({"db.t": base}, {"db.t": 7}, {"db.t": 3}) is None
    bases = {"db.t": BaseRecord.of({"bytes": 120}), "db.u": BaseRecord.of({})}
    assert cost.input_bytes(bases) == 120


def test_a_merge_on_read_change_counts_the_data_files_its_deletes_point_at() -> None:
    """The version diff reads each data file a window's delete file points at, at both
    versions: a delete in each of a table's files costs twice the table (TPC-H's RF2 on
    merge-on-read line items, bench/results/2026-12-03-tpch-mor), one in one file of 100
    costs twice that file."""

    def deletes(files: int) -> TableMetadata:
        return _table(
            Snapshot(1, None, 0, "append", 10_000, 0, 10_000, data_files=100),
            Snapshot(
                2,
                1,
                files,
                "overwrite",
                files,
                0,
                10_000 + files,
                added_delete_files=files,
                data_files=100,
            ),
        )

    spread = cost.changes({"db.t": deletes(100)}, {"db.t": 1}, {"db.t": 2})
    one = cost.changes({"db.t": deletes(1)}, {"db.t": 1}, {"db.t": 2})
    assert spread == [cost.Change("db.t", 100 + 2 * 10_100, 10_100)]
    assert one == [cost.Change("db.t", 1 + 2 * 100, 10_001)]
    # the build took 4 s: auto rebuilds the spread change, refreshes the one
    built = [run_history.Run("build", 0, 4.0, 0, 10_000)]
    assert cost.weigh(cost.Policy.AUTO, built, spread, 10_100).rebuild
    assert not cost.weigh(cost.Policy.AUTO, built, one, 10_001).rebuild


def test_each_policy_picks_as_documented() -> None:
    runs = [run_history.Run("build", 0, 2.0, 0, 1000), run_history.Run("refresh", 1, 6.0, 20, 1000)]
    small, large = cost.estimate(runs, 5, 1000), cost.estimate(runs, 900, 1000)
    assert small.refresh == 6.0 and large.refresh == 6.0 * 900 / 20
    change = [cost.Change("db.t", 900, 1000)]
    # auto: the cheaper; a refresh timed slower than the rebuild loses even for a small change
    assert cost.choose(cost.Policy.AUTO, large, change).rebuild
    assert cost.choose(cost.Policy.AUTO, small, change).rebuild
    assert not cost.choose(cost.Policy.AUTO, cost.Estimate(1.0, 2.0, "x"), change).rebuild
    assert not cost.choose(cost.Policy.AUTO, cost.Estimate(None, 2.0, "x"), change).rebuild
    assert not cost.choose(cost.Policy.INCREMENTAL, large, change).rebuild
    assert cost.choose(cost.Policy.FULL, cost.Estimate(None, None, "x"), change).rebuild
    # no build timed (a state built by an older version): refresh
    assert cost.estimate(runs[1:], 5, 1000).rebuild is None


def test_only_auto_names_a_table_and_only_after_a_history_of_rebuilds() -> None:
    """A model whose every remembered run rebuilt is told that a `table` does that work; a
    refresh among those runs, another policy, or a run that refreshes keeps quiet."""
    keep = run_history.KEEP
    rebuilds = [run_history.Run("build", 0, 1.0, 0, 100)] + [
        run_history.Run("rebuild", n, 3.0, 0, 100) for n in range(1, keep + 1)
    ]
    whole = [cost.Change("db.t", 200, 100)]  # a rewrite: a rebuild by every estimate
    said = cost.weigh(cost.Policy.AUTO, rebuilds, whole, 100)
    assert said.rebuild and said.why.endswith(cost.TABLE_HINT)
    one_refresh = [*rebuilds[:-1], run_history.Run("refresh", keep + 1, 9.0, 90, 100)]
    assert cost.TABLE_HINT not in cost.weigh(cost.Policy.AUTO, one_refresh, whole, 100).why
    assert cost.TABLE_HINT not in cost.weigh(cost.Policy.FULL, rebuilds, whole, 100).why
    tiny = [cost.Change("db.t", 0, 100)]  # no bytes changed: the prior's statements only
    refreshed = cost.weigh(cost.Policy.AUTO, rebuilds, tiny, 100)
    assert not refreshed.rebuild and cost.TABLE_HINT not in refreshed.why
    # a model's state rebuilt past its earlier states (`refresh.py`) says it likewise
    why = "its sub-query state s0 would be rebuilt"
    assert cost.with_table_hint(why, cost.Policy.AUTO, rebuilds[1:]).endswith(cost.TABLE_HINT)
    assert cost.with_table_hint(why, cost.Policy.INCREMENTAL, rebuilds[1:]) == why


def test_an_earlier_state_leaves_its_rebuild_to_the_model_only_where_the_model_would_rebuild():
    """An earlier state of a model that its policy rebuilds leaves that rebuild to the model's
    state (`from_bases.py`), unless it rebuilds to time a rebuild or has fallen behind a
    rebuild past it: then it catches up, by a rebuild if need be, where the change since
    that rebuild would be refreshed (else a model rebuilt past it once would be forever)."""
    from types import SimpleNamespace

    import pytest

    from dbt.adapters.spark_ivm.compiler.runtime import choice
    from dbt.adapters.spark_ivm.compiler.runtime.outcome import Rebuild
    from dbt.adapters.spark_ivm.compiler.runtime.session import Head
    from dbt.adapters.spark_ivm.compiler.runtime.state_meta import StateMeta

    table = _table(
        Snapshot(1, None, 0, "append", 100, 0, 100),
        Snapshot(2, 1, 0, "overwrite", 90, 90, 100),  # rewrote nearly every file
        Snapshot(3, 2, 0, "append", 1, 0, 101),  # a small insert
    )
    meta = StateMeta.parse('{"watermarks": {"db.t": 1}}', None)
    assert meta is not None
    heads = {"db.t": Head("m3.json", 3)}
    bases = {"db.t": BaseRecord.of({"bytes": 101})}
    timed = [
        run_history.Run("build", 0, 1.0, 0, 100),
        run_history.Run("rebuild", 1, 1.0, 0, 100),
        run_history.Run("refresh", 2, 0.2, 2, 100),
    ]
    session = SimpleNamespace(model="m__ivm_s0", log=print, recompute_instead=None)

    def rebuild(
        runs: list[run_history.Run], since: dict[str, int | None] | None, state: StateMeta = meta
    ) -> Rebuild:
        with pytest.raises(Rebuild) as raised:
            choice.choose(
                session,  # type: ignore[arg-type]
                cost.Policy.AUTO,
                runs,
                0,
                state,
                heads,
                {"db.t": table},
                bases,
                (lambda: since),
            )
        assert raised.value.in_place
        return raised.value

    assert rebuild(timed, None).deferrable  # 181 bytes changed: the model rebuilds past it
    assert rebuild(timed, {"db.t": 3}).deferrable  # nothing since: as the model was
    # Rebuilt past at snapshot 2, the change since is the small insert: it catches up.
    assert not rebuild(timed, {"db.t": 2}).deferrable
    # No rebuild in place timed lately, and a refresh of the insert estimated at 0.6 s of a
    # 1.0 s rebuild: it rebuilds to time one.
    behind = StateMeta.parse('{"watermarks": {"db.t": 2}}', None)
    assert behind is not None
    untimed = [run_history.Run("build", 0, 1.0, 0, 100), run_history.Run("refresh", 2, 0.6, 2, 100)]
    exploring = rebuild(untimed, None, behind)
    assert exploring.reason.startswith("timing a rebuild") and not exploring.deferrable
    # Behind a rebuild past at snapshot 2, with the same history: its own window is rebuilt
    # on the estimates, the insert since would be only to time a rebuild, which a state that
    # defers never does: it catches up.
    assert not rebuild(untimed, {"db.t": 2}).deferrable
