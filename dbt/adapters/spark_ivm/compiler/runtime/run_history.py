"""run_history: the runs a state remembers, which the cost model estimates from (`cost.py`).

A state's metadata row keeps its last `KEEP` runs: each run's mode, start, seconds, bytes of
its inputs' change and of all inputs, and for the user the state rows it wrote and the base
snapshots it reflects. A run's seconds are known only once its commit is: the next run reads
them from the time of the state's last commit (`Head.updated_ms`) less the time the run
started (`timed`), so a run's upkeep counts too; a build writes its rows and its record in
one statement, so the next run counts them (`counted`). The last build or rebuild is kept
however old (`remembered`): it is the only guide to a rebuild's cost.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

#: Runs a state remembers.
KEEP = 8
#: A run's mode: a build from nothing (first run, changed SQL), a rebuild in place (chosen
#: by the policy), a refresh.
BUILD, REBUILD, REFRESH = "build", "rebuild", "refresh"


@dataclass(frozen=True)
class Run:
    """One run of a state, as its metadata row remembers it. `rows` and `snapshots` came
    later (keys `inserted`, `updated`, `deleted`, `snapshots`): a record without them reads
    as not known, and older code reading a record with them ignores them.

    >>> Run.parse({"mode": "build", "started_ms": 5, "inputs": 90}).rows is None
    True
    >>> run = Run("refresh", 1000, 2.5, 10, 90, (1, 2, 0), (("db.t", 7),))
    >>> run.json()["inserted"], run.json()["snapshots"], Run.parse(run.json()) == run
    (1, {'db.t': 7}, True)
    """

    mode: str  # "build", "rebuild" or "refresh"
    # When the run started (epoch ms, the dbt process's clock); a rebuild a refresh turned
    # into: less the refresh's capture and delta (`choice.rebuild_started`).
    started_ms: int
    seconds: float | None  # start to the state's last commit (None: not known yet)
    change: int = 0  # bytes of input files the commits since the watermark added or removed
    inputs: int = 0  # bytes of all inputs' files
    # State rows the run inserted, updated and deleted. A refresh knows them before its
    # commit (the delta's counts) and records them in it; a build writes its rows and its
    # record in one statement, so the next run counts them (`counted`). None: not known.
    rows: tuple[int, int, int] | None = None
    # Per base relation, the snapshot the run brought the state to (its watermarks).
    snapshots: tuple[tuple[str, int | None], ...] = ()
    # A refresh that turned into a rebuild after its delta (`turned`): it committed nothing,
    # and its seconds are what it spent plus the rebuild's estimate.
    turned: bool = False

    def json(self) -> dict[str, Any]:
        inserted, updated, deleted = self.rows or (None, None, None)
        return {
            "mode": self.mode,
            "started_ms": self.started_ms,
            "seconds": self.seconds,
            "change": self.change,
            "inputs": self.inputs,
            "inserted": inserted,
            "updated": updated,
            "deleted": deleted,
            "snapshots": dict(self.snapshots),
            "turned": self.turned,
        }

    @classmethod
    def parse(cls, found: Any) -> Run | None:
        try:
            seconds = found.get("seconds")
            return cls(
                str(found["mode"]),
                int(found["started_ms"]),
                None if seconds is None else float(seconds),
                int(found.get("change", 0) or 0),
                int(found.get("inputs", 0) or 0),
                _rows(found),
                _snapshots(found.get("snapshots")),
                found.get("turned") is True,
            )
        except (AttributeError, KeyError, TypeError, ValueError):
            return None


def reflecting(watermarks: Mapping[str, int | None]) -> tuple[tuple[str, int | None], ...]:
    """A run's `snapshots`: the watermarks it writes, by relation.

    >>> reflecting({"db.u": None, "db.t": 7})
    (('db.t', 7), ('db.u', None))
    """
    return tuple(sorted(watermarks.items()))


def _rows(found: Mapping[str, Any]) -> tuple[int, int, int] | None:
    """A record's state rows (None where any count is missing or damaged: not known).

    >>> _rows({"inserted": 3, "updated": 0, "deleted": "1"}), _rows({"inserted": 3})
    ((3, 0, 1), None)
    """
    try:
        inserted, updated, deleted = (int(found[k]) for k in ("inserted", "updated", "deleted"))
    except (KeyError, TypeError, ValueError):
        return None
    return inserted, updated, deleted


def _snapshots(found: Any) -> tuple[tuple[str, int | None], ...]:
    """A record's snapshots by relation, sorted (none where they cannot be read).

    >>> _snapshots({"db.u": None, "db.t": "7"}), _snapshots("junk")
    ((('db.t', 7), ('db.u', None)), ())
    """
    try:
        return tuple(sorted((str(r), None if s is None else int(s)) for r, s in found.items()))
    except (AttributeError, TypeError, ValueError):
        return ()


def history(recorded: Mapping[str, Any]) -> list[Run]:
    """The runs a metadata row remembers (none where it has no readable list)."""
    runs = recorded.get("runs")
    if not isinstance(runs, list):
        return []
    return [run for run in map(Run.parse, runs) if run is not None]


def timed(runs: Sequence[Run], committed_ms: int | None) -> list[Run]:
    """The history with its last run's seconds filled in from the state's last commit.

    >>> timed([Run("build", 1_000, None)], 4_500)[0].seconds
    3.5
    >>> timed([Run("build", 9_000, None)], 4_500)[0].seconds is None  # clocks disagree
    True
    """
    if not runs or runs[-1].seconds is not None or committed_ms is None:
        return list(runs)
    last = runs[-1]
    if committed_ms < last.started_ms:
        return list(runs)
    return [*runs[:-1], replace(last, seconds=round((committed_ms - last.started_ms) / 1000, 3))]


def uncounted(runs: Sequence[Run]) -> bool:
    """Is the last run a build whose rows are not known yet (`counted` would fill them)?

    >>> uncounted([Run("build", 0, None)]), uncounted([Run("refresh", 0, None)]), uncounted([])
    (True, False, False)
    """
    return bool(runs) and runs[-1].mode in (BUILD, REBUILD) and runs[-1].rows is None


def counted(runs: Sequence[Run], state_rows: int | None) -> list[Run]:
    """The history with its last run's rows filled in where it is a build not counted yet:
    the state's data rows now, which it inserted (no commit has come since: a later run
    would be the last).

    >>> counted([Run("build", 0, 1.0)], 25)[0].rows
    (25, 0, 0)
    """
    if state_rows is None or not uncounted(runs):
        return list(runs)
    return [*runs[:-1], replace(runs[-1], rows=(state_rows, 0, 0))]


def as_read(
    recorded: Mapping[str, Any], committed_ms: int | None, state_rows: Callable[[], int | None]
) -> list[Run]:
    """The runs a metadata row remembers as a run reads them: the last one timed by the
    state's last commit (`timed`) and, a build not counted yet, counted by `state_rows()`
    (`counted`; asked only then: reading the rows may cost a read of the table).

    >>> recorded = {"runs": [{"mode": "build", "started_ms": 1_000, "seconds": None}]}
    >>> as_read(recorded, 4_500, lambda: 25)
    [Run(mode='build', started_ms=1000, seconds=3.5, change=0, inputs=0, rows=(25, 0, 0), \
snapshots=(), turned=False)]
    """
    runs = timed(history(recorded), committed_ms)
    return counted(runs, state_rows()) if uncounted(runs) else runs


def remembered(runs: Sequence[Run], run: Run) -> list[dict[str, Any]]:
    """The history to record with `run` added, the oldest forgotten beyond `KEEP`, except
    the last build or rebuild, kept first however old.

    >>> old = [Run("build", 0, 9.0)] + [Run("refresh", n, 1.0) for n in range(1, KEEP + 1)]
    >>> kept = remembered(old, Run("refresh", 99, None))
    >>> len(kept), kept[0]["mode"], kept[1]["started_ms"]
    (9, 'build', 2)
    """
    history = [*runs, run]
    kept = history[-KEEP:]
    built = [r for r in history if r.mode in (BUILD, REBUILD)]
    if built and built[-1] not in kept:
        kept = [built[-1], *kept]
    return [r.json() for r in kept]
