"""outcome: what a build or refresh of one state ended in, as types.

A run ends in an `Outcome` whose `mode` is a `Mode`; a refresh that finds the state cannot be
trusted or the change cannot be read raises `Rebuild` with the reason, and the runtime builds
the state anew and says why (`refresh.Maintainer.run`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dbt.adapters.spark_ivm.compiler.operators.prepare import Prepared

#: The reason of a build that found no state.
FIRST_RUN = "first run"


class Mode(StrEnum):
    """How a run wrote the model's relation (a string to the Jinja that reads it)."""

    BUILD = "build"  # built from the query (first run, or rebuilt: see `Outcome.reason`)
    REFRESH = "refresh"  # the change applied to the state
    REBUILD = "rebuild"  # a table rebuilt in full every run (`ivm_unsupported='rebuild'`)
    # Nothing written: a change that would rebuild the model was left unapplied
    # (`on_configuration_change: continue`, `config_change.py`); the relation is as it was.
    SKIP = "skip"
    # `--empty` on a model not built yet: a table of its shape, no rows, no state (`empty.py`)
    EMPTY = "empty"


class Rebuild(Exception):
    """The state cannot be refreshed (a base table's event, an unreadable change): build it
    anew. `reason` is what the log line and the adapter response say.

    >>> str(Rebuild("the state has no record of base table db.t"))
    'the state has no record of base table db.t'
    """

    def __init__(
        self, reason: str, in_place: bool = False, deferrable: bool = True, by_cost: bool = False
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        # The state's plan and inputs are the ones it was built from (a rebuild chosen by
        # cost): its rows are replaced in one commit and its view is kept.
        self.in_place = in_place
        # An earlier state of a model may leave a rebuild in place to the model's state
        # (`RebuildDeferred`); not one that times a rebuild, or that catches the state up.
        self.deferrable = deferrable
        # A refresh that turned into a rebuild after its delta, which asked for a recompute
        # costing more than a rebuild (`recompute_cost.py`): the run records it as a refresh
        # of its change size that cost that much (`cost.turned`).
        self.by_cost = by_cost


class RebuildDeferred(Exception):
    """An earlier state of a model would be rebuilt in place by its policy: the model's own
    state is rebuilt past it instead (`from_bases.py`), and it is left as it was."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class StateRows:
    """Rows of the model's own state a run wrote: a build inserts every row; a refresh's
    MERGE inserts, updates and deletes (a window refresh rewrites its partitions' rows)."""

    inserted: int = 0
    updated: int = 0
    deleted: int = 0

    @property
    def affected(self) -> int:
        return self.inserted + self.updated + self.deleted


@dataclass
class Outcome:
    """What the materialization commits and reports."""

    mode: Mode
    reason: str
    # The materialization's `main` statement: the view's CREATE, a table's CREATE .. AS; None
    # where the run keeps the model's view as it is (a refresh, no change, a rebuild in place,
    # a skipped run): then there is nothing to run (a `SELECT * FROM <view> LIMIT 0` cost
    # 0.05-0.09 s a run, 2026-11-29).
    main_sql: str | None
    summary: str
    timings: list[tuple[str, float]] = field(default_factory=list)
    # None: not known (a table rebuilt by `ivm_unsupported='rebuild'`)
    rows: StateRows | None = None
    # A build that replaced the state's rows in one commit and kept the view (`Rebuild`):
    # readers saw the old relation until then, and the view need not be created.
    in_place: bool = False
    # A build that replaced the state in one commit and found the view there the one it
    # would create: it keeps it.
    keeps_view: bool = False

    @property
    def creates_view(self) -> bool:
        """Must the relation's view be (re)created by `main_sql`? A build does, unless it
        keeps the view there; a rebuild in place keeps it."""
        return self.mode is Mode.BUILD and not self.in_place and not self.keeps_view

    @property
    def new_history(self) -> bool:
        """Is the state a new table or a replaced one, its rows no change of the old ones
        that readers could follow (a build; not a rebuild in place)?"""
        return self.mode is Mode.BUILD and not self.in_place

    @property
    def changed(self) -> bool:
        """Did the run write the relation's rows (a refresh that found nothing to apply
        did not, nor did a skipped run)?"""
        if self.mode in (Mode.SKIP, Mode.EMPTY):
            return False
        return self.mode is not Mode.REFRESH or self.rows is None or self.rows.affected > 0


def refresh_summary(changes: str, prepared: Prepared | None, logged: bool) -> str:
    """The refresh's log line: what changed, and what the commit did with it.

    >>> from dbt.adapters.spark_ivm.compiler.operators.prepare import Prepared
    >>> refresh_summary("db.t: 3 delta rows", Prepared("MERGE ..", ("d", ["k"]), 1, 1, 1), True)
    'refreshed (db.t: 3 delta rows); state rows +1 ~1 -1'
    >>> refresh_summary("db.t: 2 delta rows", Prepared(None, ("d", ["k"])), True)
    'no MERGE: the changes do not affect the view (db.t: 2 delta rows)'
    """
    if prepared is not None and prepared.partitions:
        return (
            f"refreshed ({changes}); {prepared.partitions} window partitions recomputed into "
            f"{prepared.partition_rows} rows"
        )
    if prepared is not None and (prepared.inserted or prepared.updated or prepared.deleted):
        p = prepared
        return f"refreshed ({changes}); state rows +{p.inserted} ~{p.updated} -{p.deleted}" + (
            f", {p.recomputed} groups recomputed" if p.recomputed else ""
        )
    why = "no base table changed" if not logged else "the changes do not affect the view"
    return f"no MERGE: {why} ({changes})"


def refresh_rows(prepared: Prepared | None) -> StateRows:
    """The state rows a refresh wrote (a window refresh rewrites its partitions' rows, counted
    as inserted).

    >>> from dbt.adapters.spark_ivm.compiler.operators.prepare import Prepared
    >>> refresh_rows(Prepared("MERGE ..", ("d", ["p"]), partitions=2, partition_rows=7))
    StateRows(inserted=7, updated=0, deleted=0)
    """
    if prepared is None:
        return StateRows()
    inserted = prepared.inserted + prepared.partition_rows
    return StateRows(inserted, prepared.updated, prepared.deleted)


def unchanged(relations: Iterable[str], timings: list[tuple[str, float]]) -> Outcome:
    """The outcome of a refresh that found no input's metadata moved since its last commit.

    >>> unchanged(["db.t"], []).summary
    'no MERGE: no base table changed (db.t: 0 delta rows)'
    """
    changes = ", ".join(f"{r}: 0 delta rows" for r in relations)
    return Outcome(
        mode=Mode.REFRESH,
        reason="incremental",
        main_sql=None,
        summary=refresh_summary(changes, None, False),
        timings=timings,
        rows=StateRows(),
    )
