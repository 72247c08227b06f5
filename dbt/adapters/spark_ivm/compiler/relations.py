"""relations: the names of the relations an ivm model keeps (pure).

A model's relation is a view over its state table; beside them it may keep sub-query and
auxiliary states (each a view and a state table, `dataflow.py`), a delta log, and the
session views of one run's scratch relations. All are named from the model's schema and
identifier with clear suffixes, so that what a model keeps can be found and dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The suffix of every state table: a relation named so is an ivm state (of a model, or of
#: one of its sub-query or auxiliary states).
STATE_SUFFIX = "__ivm_state"


def sub_query_name(name: str, index: int) -> str:
    """The name of sub-query state `index` of the model or relation `name`."""
    return f"{name}__ivm_s{index}"


def auxiliary_name(name: str) -> str:
    """The name of the auxiliary state of the model or relation `name`."""
    return f"{name}__ivm_aux"


@dataclass(frozen=True)
class Target:
    """The model's relation and the names of its companions (same schema, clear suffixes)."""

    schema: str
    identifier: str

    @property
    def view(self) -> str:
        return f"{self.schema}.{self.identifier}".lower()

    @property
    def state(self) -> str:
        return f"{self.view}{STATE_SUFFIX}"

    def sub_query(self, index: int) -> Target:
        """The names of the model's sub-query state number `index` (`dataflow.cut`).

        >>> Target("db", "m").sub_query(1).state
        'db.m__ivm_s1__ivm_state'
        """
        return Target(self.schema, sub_query_name(self.identifier, index))

    @property
    def auxiliary(self) -> Target:
        """The names of the model's auxiliary state (`optimize/aux_state.py`).

        >>> Target("db", "m").auxiliary.view
        'db.m__ivm_aux'
        """
        return Target(self.schema, auxiliary_name(self.identifier))

    def _scratch(self, kind: str) -> str:
        # Session views are not qualified by a schema, so the name carries the model's.
        return f"__ivm_{kind}_{self.schema}_{self.identifier}".lower()

    @property
    def recomputed(self) -> str:
        return self._scratch("recomputed")

    @property
    def delta(self) -> str:
        return self._scratch("delta")

    def log(self, index: int) -> str:
        return self._scratch(f"log_{index}")

    def bracket(self, index: int) -> str:
        return self._scratch(f"bracket_{index}")

    def keys(self, index: int) -> str:
        return self._scratch(f"keys_{index}")

    def changelog_view(self, index: int) -> str:
        return self._scratch(f"cl_{index}")

    def file_scan(self, index: int, new: bool) -> str:
        return self._scratch(f"files_{index}_{'new' if new else 'old'}")

    def file_read(self, index: int, part: str) -> str:
        """A read of some data files of input `index` (`capture/position_deletes.py`)."""
        return self._scratch(f"files_{index}_{part}")

    def positions(self, index: int, part: str) -> str:
        """Positions of delete files of input `index` (`capture/position_deletes.py`)."""
        return self._scratch(f"positions_{index}_{part}")
