"""inputs: what a model reads, resolved before it is planned.

Before a model's states are planned the run settles what its SQL reads (`chain.py` calls these
in order):

* views: the views the model reads are replaced by their queries (`frontend/views.py`), and
  their digests recorded, so a changed view definition is seen as a changed model;
* upstream ivm models: one that is behind its own base tables is named in the run's summary
  (`upstream.py`);
* snapshot-diff copies: a base relation without Iceberg snapshots is read through an Iceberg
  copy brought level with it first (`capture/snapshot_diff.py`).

Each function speaks SQL over the run's `Executor` and returns what it found; the chain keeps it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from dbt.adapters.spark_ivm.compiler.capture import snapshot_diff
from dbt.adapters.spark_ivm.compiler.frontend import views
from dbt.adapters.spark_ivm.compiler.runtime import upstream
from dbt.adapters.spark_ivm.compiler.runtime.executor import (
    Executor,
    ViewReader,
    describe_columns,
    meta_rows,
)
from dbt.adapters.spark_ivm.compiler.runtime.outcome import FIRST_RUN
from dbt.adapters.spark_ivm.compiler.runtime.session import Head
from dbt.adapters.spark_ivm.compiler.sql.layout import Layout
from dbt.adapters.spark_ivm.compiler.sql.templates import sql, table


@dataclass(frozen=True)
class ViewsRead:
    """The model's SQL with the views it reads replaced by their queries (None: it reads no
    view), their digests, and why the model changed when a view's definition did (None: not
    because of a view)."""

    expanded_sql: str | None
    digests: dict[str, str]
    changed: str | None


def read_views(
    executor: Executor,
    user_sql: str,
    default_db: str,
    model: str,
    recorded: str | None,
    is_table: Callable[[str], bool] = lambda relation: False,
) -> ViewsRead:
    """The views `user_sql` reads, against the digests the model's view recorded (`recorded`,
    its `views.VIEWS` property); `is_table`: relations known to be tables, not views."""
    reader = executor.view_definition if isinstance(executor, ViewReader) else None
    found = views.read_definitions(executor.fetch, user_sql, default_db, model, is_table, reader)
    digests = views.digests(found)
    expanded = views.expand(user_sql, found, default_db, model) if found else None
    return ViewsRead(expanded, digests, views.changed(recorded, digests))


def stale_upstreams(
    executor: Executor,
    states: list[str],
    heads_of: Callable[[list[str]], Mapping[str, Head]],
    model: str,
) -> list[str]:
    """What the run says of each upstream ivm model's state in `states` that is behind its
    own base tables (`upstream.py`); `heads_of` reads the tables' current snapshots."""
    notes: list[str] = []
    for state in states:
        try:
            rows = meta_rows(executor, state)
            marks = upstream.in_catalog_of(state, upstream.watermarks(rows[0][0] if rows else None))
            heads = heads_of(sorted(marks))
        except Exception:  # noqa: BLE001, S112 - not an ivm state we can read: nothing to say
            continue
        changed = upstream.behind(marks, {r: h.snapshot for r, h in heads.items()})
        if changed:
            notes.append(upstream.note(state, changed, model))
    return notes


@dataclass(frozen=True)
class CopySynced:
    """What bringing a snapshot-diff copy level with its relation did: the line to log, and
    whether the copy was made now (a refused model drops it again)."""

    said: str
    created: bool


def sync_copy(
    executor: Executor,
    relation: str,
    copy: str,
    copy_properties: Mapping[str, str] | None,
    layout: Layout,
    model: str,
) -> CopySynced:
    """Bring the Iceberg copy of `relation` (a relation without snapshots) level with it:
    (re)create it when missing (`copy_properties` None) or when the relation's columns
    changed, else overwrite it when any row differs."""
    columns = describe_columns(executor.fetch(f"DESCRIBE TABLE {sql(table(relation))}"))
    digest = snapshot_diff.schema_digest(columns)
    if copy_properties is None or copy_properties.get(snapshot_diff.SOURCE_SCHEMA) != digest:
        why = FIRST_RUN if copy_properties is None else "its columns changed"
        for statement in snapshot_diff.create_copy_sql(relation, copy, columns, layout):
            executor.execute(statement)
        return CopySynced(
            f"ivm model '{model}': {relation} keeps no snapshots: copied into {copy} ({why}); "
            "its changes are read by snapshot diff",
            created=copy_properties is None,
        )
    rows = executor.fetch(snapshot_diff.differing_rows_sql(relation, copy, columns))
    differing = int(rows[0][0])
    if differing:
        executor.execute(snapshot_diff.overwrite_copy_sql(relation, copy))
    return CopySynced(
        f"ivm model '{model}': snapshot diff of {relation} against {copy}: "
        f"{differing} distinct rows differ" + ("; copy overwritten" if differing else ""),
        created=False,
    )
