"""prepare: what an operator's commit is prepared over, and what it prepares.

A refresh ends in one commit to the state table. Before it, the operator family of the state
(`family.py`) computes its scratch relations (the delta table, recomputed rows) over the
run's `Run` and returns the commit statement with what it will do (`Prepared`). The
operators never speak to a connection themselves: `Run` is satisfied by the runtime's
`Session`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from sqlglot import exp


class Run(Protocol):
    """What a commit's preparation needs of the run."""

    def compute_scratch(self, label: str, name: str, select: exp.Expression) -> None:
        """Compute `select` into the scratch relation `name`."""
        ...

    def fetch(self, label: str, statement: str) -> list[tuple]:
        """The rows of a (small) query."""
        ...

    def compute_measured(
        self, label: str, name: str, select: exp.Expression, measures: Sequence[str]
    ) -> tuple:
        """Compute `select` into `name` and the aggregates `measures` over its rows, in
        one pass."""
        ...

    def compute_counted(self, label: str, name: str, select: exp.Expression) -> int:
        """Compute `select` into `name`; its number of rows, counted as they are computed."""
        ...

    def state_types(self) -> dict[str, str]:
        """The state table's column types, by lower-case name."""
        ...

    def merge_scope(
        self, relation: str, columns: Sequence[str], alias: str, changed: int
    ) -> exp.Expression | None:
        """The condition on the state's rows (as `alias`) that every row matching a row of
        `relation` by `columns` meets, where naming it pays (`runtime/merge_scope.py`;
        `changed`: the rows of `relation` that change a state row)."""
        ...

    def checkpoint(self, step: str) -> None:
        """A point where a test may make the refresh fail (`runtime/failpoints.py`)."""
        ...

    def may_recompute(self, groups: int, reads: int) -> None:
        """Before `groups` groups are recomputed in `reads` reads of the inputs: the run
        raises where it rebuilds the state instead (`runtime/recompute_cost.py`)."""
        ...


@dataclass(frozen=True)
class MetaWrite:
    """The metadata row a commit writes (`written`) over the one the run read (`read`): the
    commit holds only while the state's row is still `read` (`state_table.meta_unchanged`; None:
    no other process can commit to the state, and the commit needs no such guard)."""

    read: str | None
    written: str


#: The metadata row a commit writes, given the state rows it inserts, updates and deletes:
#: a refresh records them with its run (`runtime/cost.py`), and they are known only once the
#: delta table is (the stats query), before the commit.
MetaRow = Callable[[int, int, int], MetaWrite]


@dataclass(frozen=True)
class Names:
    """The relations a commit is prepared in: the state table and two scratch relations."""

    state: str
    delta: str
    recomputed: str


@dataclass(frozen=True)
class Prepared:
    """A refresh's commit, ready: the MERGE (None: no state row changes), where the changed
    state keys are (delta table, key columns: an auxiliary state hands them to the model,
    `runtime/chain.py`), and what the MERGE does (state rows inserted, updated, deleted,
    groups recomputed; or window partitions recomputed into rows).

    >>> Prepared(None, ("d", ["k"])).changes_rows
    False
    """

    commit: str | None
    changed_keys: tuple[str, list[str]]
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    recomputed: int = 0
    partitions: int = 0
    partition_rows: int = 0

    @property
    def changes_rows(self) -> bool:
        """Does the commit change data rows of the state (else: only its metadata row)?"""
        return self.commit is not None
