"""cleanup: the companion relations of models that are no longer ivm models, dropped.

An ivm model `m` keeps beside its view, in its schema, relations named `m__ivm_<...>`: its
state (`m__ivm_state`), delta log (`m__ivm_dlog`), sub-query and auxiliary states with their
views (`m__ivm_s0`, `m__ivm_s0__ivm_state`, `m__ivm_aux`, ...) and copies of bases without
snapshots (`m__ivm_copy__<db>__<table>`). A model switched to another materialization, or
removed from the project, leaves them behind (`dbt run-operation ivm_cleanup` drops them).

The rule, per schema the project's models live in, for each relation whose name holds
`__ivm_` (its owner: the name before the first `__ivm_`):

* the owner is an ivm model of the project -> kept;
* the owner is a model of another materialization whose relation is still an ivm view (not
  run since the switch) -> kept, and said: dropping its state would break the view;
* else (switched and run, or removed) -> dropped; a removed model's own view is dropped too
  when it is an ivm view (it reads the state that goes).

A relation in a schema shared with another dbt project that keeps ivm models is that
project's, but looks orphaned from here: `dry_run` lists what would go.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.runtime.executor import Executor, table_properties
from dbt.adapters.spark_ivm.compiler.runtime.view import STATE_TABLE
from dbt.adapters.spark_ivm.compiler.sql.templates import sql

MARK = "__ivm_"


@dataclass(frozen=True)
class Drop:
    """A relation to drop and why."""

    relation: str  # schema.name, lower case
    is_view: bool
    why: str

    def sql(self) -> str:
        kind = "VIEW" if self.is_view else "TABLE"
        purge = "" if self.is_view else " PURGE"
        return f"DROP {kind} IF EXISTS {self.relation}{purge}"


@dataclass(frozen=True)
class Listing:
    """One schema as the catalog lists it."""

    schema: str
    relations: Mapping[str, bool]  # name -> is it a view
    ivm_views: Collection[str]  # the views that are ivm models' relations (`STATE_TABLE`)


def owner(name: str) -> str | None:
    """The model a companion relation belongs to (None: not a companion).

    >>> owner("orders_by_cust__ivm_s0__ivm_state"), owner("orders_by_cust")
    ('orders_by_cust', None)
    """
    return name.split(MARK, 1)[0] if MARK in name and not name.startswith(MARK) else None


def plan_cleanup(
    listing: Listing, ivm_models: Collection[str], other_models: Collection[str]
) -> tuple[list[Drop], list[str]]:
    """What to drop in one schema, and what to say about what is kept (pure).

    `ivm_models` and `other_models`: the identifiers of the project's models in this schema,
    materialized as ivm and otherwise.

    >>> listing = Listing("db", {"a": False, "a__ivm_state": False, "b": True,
    ...     "b__ivm_state": False, "c": True, "c__ivm_state": False, "c__ivm_dlog": False,
    ...     "gone": True, "gone__ivm_state": False}, ivm_views={"c", "gone"})
    >>> drops, notes = plan_cleanup(listing, ivm_models={"b"}, other_models={"a", "c"})
    >>> [(d.relation, d.why) for d in drops]  # doctest: +NORMALIZE_WHITESPACE
    [('db.gone', 'gone is not a model of this project'),
     ('db.a__ivm_state', 'a is no longer an ivm model'),
     ('db.gone__ivm_state', 'gone is not a model of this project')]
    >>> notes
    ['kept db.c__ivm_dlog, db.c__ivm_state: c is an ivm view still; run it first']
    """
    drops: list[Drop] = []
    waiting: dict[str, list[str]] = {}
    removed: set[str] = set()
    for name in sorted(listing.relations):
        model = owner(name)
        if model is None or model in ivm_models:
            continue
        relation = f"{listing.schema}.{name}"
        if model in other_models:
            if model in listing.ivm_views:
                waiting.setdefault(model, []).append(relation)
                continue
            why = f"{model} is no longer an ivm model"
        else:
            why = f"{model} is not a model of this project"
            removed.add(model)
        drops.append(Drop(relation, listing.relations[name], why))
    # a removed model's view goes first: never a view left over a dropped state
    views = [
        Drop(f"{listing.schema}.{model}", True, f"{model} is not a model of this project")
        for model in sorted(removed)
        if model in listing.ivm_views and listing.relations.get(model)
    ]
    drops = views + drops
    notes = [
        f"kept {', '.join(kept)}: {model} is an ivm view still; run it first"
        for model, kept in sorted(waiting.items())
    ]
    return drops, notes


def listing(executor: Executor, schema: str) -> Listing | None:
    """The schema's relations (None: no such schema yet), and which of the views that own
    companions are ivm models' relations (their `STATE_TABLE` property)."""
    try:
        tables = executor.fetch(f"SHOW TABLES IN {sql(exp.to_identifier(schema))}")
        views = executor.fetch(f"SHOW VIEWS IN {sql(exp.to_identifier(schema))}")
    except Exception:  # noqa: BLE001 - the schema does not exist (yet)
        return None
    # (namespace, name, isTemporary): the session's temporary views are no schema's
    view_names = {str(r[1]).lower() for r in views if not r[2]}
    relations = {str(r[1]).lower(): str(r[1]).lower() in view_names for r in tables if not r[2]}
    owners = {o for o in map(owner, relations) if o is not None and relations.get(o)}
    ivm_views = {
        name
        for name in sorted(owners)
        if STATE_TABLE in table_properties(executor.fetch, f"{schema}.{name}")
    }
    return Listing(schema, relations, ivm_views)


def clean(
    executor: Executor, models: Mapping[str, Mapping[str, list[str]]], dry_run: bool
) -> list[str]:
    """Drop (`dry_run`: only name) what `plan_cleanup` finds in each schema of `models` (per
    schema, the identifiers of the project's models materialized as `ivm` and otherwise);
    the lines `ivm_cleanup` prints."""
    lines: list[str] = []
    dropped = 0
    for schema, found in sorted(models.items()):
        listed = listing(executor, schema.lower())
        if listed is None:
            continue
        drops, notes = plan_cleanup(
            listed,
            {m.lower() for m in found.get("ivm", [])},
            {m.lower() for m in found.get("other", [])},
        )
        lines += [f"ivm_cleanup: {note}" for note in notes]
        for drop in drops:
            if not dry_run:
                executor.execute(drop.sql())
            verb = "would drop" if dry_run else "dropped"
            lines.append(f"ivm_cleanup: {verb} {drop.relation} ({drop.why})")
            dropped += 1
    if not dropped:
        lines.append("ivm_cleanup: no companion relation of a former ivm model found")
    return lines
