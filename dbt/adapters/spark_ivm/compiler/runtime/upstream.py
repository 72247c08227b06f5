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

from collections.abc import Iterable, Mapping

from dbt.adapters.spark_ivm.compiler.relations import STATE_SUFFIX
from dbt.adapters.spark_ivm.compiler.runtime.state_meta import StateMeta
from dbt.adapters.spark_ivm.compiler.sql.templates import catalog_of


def states(relations: Iterable[str]) -> list[str]:
    """The base relations that are ivm state tables, i.e. other ivm models' states."""
    return [r for r in relations if r.endswith(STATE_SUFFIX)]


def watermarks(meta: str | None) -> dict[str, int | None]:
    """The watermarks of a state's metadata row (empty when it cannot be read).

    >>> watermarks('{"watermarks": {"db.t": "12", "db.u": null}}')
    {'db.t': 12, 'db.u': None}
    """
    found = StateMeta.parse(meta or "", view_sql_hash=None)
    return {} if found is None else found.watermarks


def in_catalog_of(state: str, marks: Mapping[str, int | None]) -> dict[str, int | None]:
    """The watermarks of `state` named as this run names relations: a state of another
    catalog (`cat.db.t__ivm_state`) wrote its inputs' two-part names as resolved in that
    catalog, its own current one.

    >>> in_catalog_of("files.db.up__ivm_state", {"db.t": 1, "lake.s.u": 2})
    {'files.db.t': 1, 'lake.s.u': 2}
    >>> in_catalog_of("db.up__ivm_state", {"db.t": 1})
    {'db.t': 1}
    """
    catalog, _ = catalog_of(state)
    if catalog is None:
        return dict(marks)
    return {(r if catalog_of(r)[0] else f"{catalog}.{r}"): seen for r, seen in marks.items()}


def behind(marks: Mapping[str, int | None], current: Mapping[str, int | None]) -> list[str]:
    """The upstream's inputs whose current snapshot is not the one its state reflects.

    >>> behind({"db.t": 12, "db.u": 3}, {"db.t": 12, "db.u": 5})
    ['db.u']
    """
    return sorted(r for r, seen in marks.items() if r in current and current[r] != seen)


def has_ivm_readers(nodes: Mapping[str, Mapping] | None, unique_id: str | None) -> bool:
    """Does an ivm model read this node, directly or through views and ephemeral models?
    `nodes`: dbt's graph (`graph.nodes` in Jinja). Such a model keeps a delta log.

    >>> g = {"model.p.up": {"config": {"materialized": "ivm"}, "depends_on": {"nodes": []}},
    ...      "model.p.v": {"config": {"materialized": "view"},
    ...                    "depends_on": {"nodes": ["model.p.up"]}},
    ...      "model.p.down": {"config": {"materialized": "ivm"},
    ...                       "depends_on": {"nodes": ["model.p.v"]}}}
    >>> has_ivm_readers(g, "model.p.up"), has_ivm_readers(g, "model.p.down")
    (True, False)
    """
    if not nodes or not unique_id:
        return False
    readers: dict[str, list[tuple[str, str]]] = {}
    for node_id, node in nodes.items():
        materialized = str((node.get("config") or {}).get("materialized") or "")
        for parent in (node.get("depends_on") or {}).get("nodes") or []:
            readers.setdefault(parent, []).append((node_id, materialized))
    seen = {unique_id}
    todo = [unique_id]
    while todo:
        for node_id, materialized in readers.get(todo.pop(), []):
            if materialized == "ivm":
                return True
            if materialized in ("view", "ephemeral") and node_id not in seen:
                seen.add(node_id)
                todo.append(node_id)
    return False


def note(state: str, changed: list[str], model: str) -> str:
    """The run's words for a stale upstream."""
    return (
        f"upstream state {state} is behind its base tables ({', '.join(changed)} changed since "
        f"its last run): this run reflects it as of that run; `dbt run -s +{model}` refreshes "
        "it first"
    )
