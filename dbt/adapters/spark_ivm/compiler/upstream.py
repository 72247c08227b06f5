"""upstream: an ivm model that reads another ivm model, and whether that one is up to date.

An ivm model over another reads the upstream's state table (`<db>.<up>__ivm_state`, through
the upstream's view, `views.py`) as one of its base tables, so it reflects the upstream as of
the upstream's last refresh, exactly as a fresh run of its SQL would. When the upstream's own
base tables changed since that refresh (the downstream was run alone: `dbt run -s down`),
the downstream's result is exact over a stale upstream; the run says so, naming what changed:

    upstream state db.up__ivm_state is behind its base tables (db.orders changed since its
    last run): this run reflects it as of that run; `dbt run -s +down` refreshes it first

The test compares the watermarks in the upstream state's metadata row with the current
snapshots of the tables they name: one metadata read per upstream and one heads query.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

#: The suffix of every ivm state table (`facts.Target.state`).
STATE_SUFFIX = "__ivm_state"


def states(relations: Iterable[str]) -> list[str]:
    """The base relations that are ivm state tables, i.e. other ivm models' states."""
    return [r for r in relations if r.endswith(STATE_SUFFIX)]


def watermarks(meta: str | None) -> dict[str, int | None]:
    """The watermarks of a state's metadata row (empty when it cannot be read).

    >>> watermarks('{"watermarks": {"db.t": "12", "db.u": null}}')
    {'db.t': 12, 'db.u': None}
    """
    try:
        found = json.loads(meta or "")["watermarks"]
        return {r: None if s is None else int(s) for r, s in found.items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        return {}


def behind(marks: Mapping[str, int | None], current: Mapping[str, int | None]) -> list[str]:
    """The upstream's inputs whose current snapshot is not the one its state reflects.

    >>> behind({"db.t": 12, "db.u": 3}, {"db.t": 12, "db.u": 5})
    ['db.u']
    """
    return sorted(r for r, seen in marks.items() if r in current and current[r] != seen)


def note(state: str, changed: list[str], model: str) -> str:
    """The run's words for a stale upstream."""
    return (
        f"upstream state {state} is behind its base tables ({', '.join(changed)} changed since "
        f"its last run): this run reflects it as of that run; `dbt run -s +{model}` refreshes "
        "it first"
    )
