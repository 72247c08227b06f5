"""contract: dbt's `contract: {enforced: true}` on an ivm model.

dbt checks an enforced contract's column names and types against the model's SQL with its own
macro (`get_assert_columns_equivalent`, as dbt-spark does for a view) before the
materialization builds anything; a difference fails the model with dbt's table of what
differs. An ivm model's relation is a view over its state, and Spark enforces no constraint on
a view (dbt-spark applies none to its views either), so each constraint the contract declares
is warned about, naming the model, the constraint and its columns, unless the constraint says
`warn_unenforced: false`, dbt's own way to silence that warning:

    >>> columns = {"id": {"name": "id", "constraints": [{"type": "not_null"}]},
    ...            "k": {"name": "k", "constraints": [{"type": "unique", "warn_unenforced": False}]}}
    >>> for line in unenforced("m", columns, [{"type": "primary_key", "columns": ["id", "k"]}]):
    ...     print(line)
    ivm model 'm': its contract's not_null constraint on id is not enforced: ...
    ivm model 'm': its contract's primary_key constraint on id, k is not enforced: ...
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

#: Why no constraint holds on an ivm model, and how to silence the warning.
WHY = (
    "an ivm model's relation is a view over its state, and Spark enforces no constraint on a "
    "view (test it with a dbt data test instead, or set warn_unenforced: false on the "
    "constraint)"
)


def _declared(
    columns: Mapping[str, Mapping[str, Any]] | None, constraints: Sequence[Mapping[str, Any]] | None
) -> Iterator[tuple[Mapping[str, Any], list[str]]]:
    """Each constraint with the columns it is on: column constraints, then the model's."""
    for name, column in (columns or {}).items():
        for constraint in column.get("constraints") or []:
            yield constraint, [str(column.get("name") or name)]
    for constraint in constraints or []:
        yield constraint, [str(c) for c in constraint.get("columns") or []]


def unenforced(
    model: str,
    columns: Mapping[str, Mapping[str, Any]] | None,
    constraints: Sequence[Mapping[str, Any]] | None,
) -> list[str]:
    """A warning for each constraint of `model`'s contract that is not silenced."""
    out = []
    for constraint, on in _declared(columns, constraints):
        if constraint.get("warn_unenforced") is False:
            continue
        kind = str(constraint.get("type") or "custom")
        where = f" on {', '.join(on)}" if on else ""
        out.append(f"ivm model '{model}': its contract's {kind} constraint{where} is not "
                   f"enforced: {WHY}")  # fmt: skip
    return out
