"""facts: what a build or refresh reads before it changes anything, and whether it holds.

The Maintainer (`refresh.py`) decides; these functions read over its `Session`, every
statement timed: the state's committed metadata row, the model's plan (from Spark's
DESCRIBEs, or from the facts the last commit recorded while every base keeps its schema),
and whether the state can still be trusted (`base_tables`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dbt.adapters.spark_ivm.compiler import render
from dbt.adapters.spark_ivm.compiler.errors import (
    BaseRelationError,
    ConcurrentCommitError,
    UncapturableBaseError,
)
from dbt.adapters.spark_ivm.compiler.frontend.analyze import analyze, base_relations
from dbt.adapters.spark_ivm.compiler.ir import Query
from dbt.adapters.spark_ivm.compiler.operators.aggregates import keep_from_env
from dbt.adapters.spark_ivm.compiler.plan import Plan, plan
from dbt.adapters.spark_ivm.compiler.runtime import base_tables
from dbt.adapters.spark_ivm.compiler.runtime.executor import (
    describe_columns,
    is_iceberg,
    meta_rows,
)
from dbt.adapters.spark_ivm.compiler.runtime.outcome import Rebuild
from dbt.adapters.spark_ivm.compiler.runtime.session import Head, Session
from dbt.adapters.spark_ivm.compiler.runtime.state_meta import SqlDigest, StateMeta

# 2: the metadata row records each base table's identity, schema and the columns read.
FORMAT_VERSION = "5"  # 3: MIN/MAX states keep ranked value lists; 4: views record
# the auxiliary-state choice (`aux_choice.py`), so that a refresh need not plan the model to find it;
# 5: variance and stddev keep shifted moment sums (`aggregates/moments.py`) instead of a value


@dataclass(frozen=True)
class Found:
    """The state a run found: its metadata row (None: no readable ivm state) and the state
    format its view was built with (None: not an ivm view)."""

    meta: StateMeta | None
    format: str | None


def base_facts(session: Session, relations: list[str]) -> dict[str, list[tuple[str, str]]]:
    """Each base relation's (column, type) pairs; an error naming it when it is not an
    Iceberg table or cannot be read."""
    model = session.model
    schemas: dict[str, list[tuple[str, str]]] = {}
    for relation in relations:
        try:
            props = session.properties(relation)
        except Exception as e:
            raise BaseRelationError(model, relation, "cannot be read", str(e)[:300]) from e
        if not is_iceberg(props):
            raise UncapturableBaseError(
                model,
                relation,
                "is not an Apache Iceberg table (views, seeds and parquet/hive tables have "
                "no snapshots to read changes from)",
                "Create it with file_format='iceberg' (e.g. `+file_format: iceberg` for "
                "seeds and table models), or use materialized='table' for this model.",
            )
        schemas[relation] = session.table_columns(relation)
    return schemas


def plan_state(
    session: Session, compiled_sql: str, default_db: str, facts: dict | None = None
) -> Plan:
    """The model's plan. `facts` (the base schemas, result columns and aggregate argument
    types recorded by the last commit) stand in for Spark's DESCRIBEs when no base table's
    schema changed since (`recorded_facts`)."""
    model = session.model
    if facts is not None:
        try:
            schemas = {r: [(n, t) for n, t in cols] for r, cols in facts["schemas"].items()}
            query = analyze(compiled_sql, model, schemas, default_db)
            outputs = [(n, t) for n, t in facts["outputs"]]
            return plan(query, outputs, list(facts["arg_types"]), keep_from_env())
        except Exception as e:  # noqa: BLE001 - facts damaged by hand: plan from Spark
            session.warn(f"ivm model '{model}': recorded facts unusable ({str(e)[:200]})")
    relations = base_relations(compiled_sql, default_db, model)
    schemas = base_facts(session, relations)
    query = analyze(compiled_sql, model, schemas, default_db)
    outputs = describe_columns(session.fetch("describe query", f"DESCRIBE QUERY {compiled_sql}"))
    args = [a.arg for a in query.aggregates]
    present = [a for a in args if a is not None]
    arg_types: list[str | None] = [None] * len(args)
    if present:
        probe = render.probe_select(query, present)
        described = describe_columns(session.fetch("describe args", f"DESCRIBE QUERY {probe}"))
        it = iter(t for _, t in described)
        arg_types = [next(it) if a is not None else None for a in args]
    return plan(query, outputs, arg_types, keep_from_env())


def recorded_facts(session: Session, meta: StateMeta, heads: dict[str, Head]) -> dict | None:
    """The planning facts the last commit recorded, when they still hold: every base table
    is the same table (uuid) with the same schema (Iceberg schema id) as then. None: plan
    from Spark's DESCRIBEs."""
    facts = meta.facts
    if facts is None or set(facts.get("schemas", {})) != set(heads):
        return None
    for relation, head in heads.items():
        before = meta.base(relation)
        if before.metadata == head.metadata:
            continue
        try:
            now = session.table_metadata(relation, head)
        except BaseRelationError:
            return None  # the full path reports it
        if now.uuid != before.uuid or now.schema_id != before.schema_id:
            return None
    return facts


def same_model(
    meta: StateMeta, digest: SqlDigest, compiled_sql: str, default_db: str, model: str
) -> bool:
    """Is the state the one of this model SQL (`digest`, `StateMeta.built_from`) over the
    same base relations?"""
    if not meta.built_from(digest):
        return False
    relations = base_relations(compiled_sql, default_db, model)
    return sorted(meta.watermarks) == sorted(relations) and meta.bases is not None


def _meta_rows(session: Session) -> list[tuple]:
    """The state's metadata row (`executor.meta_rows`), timed."""
    return session.timed("meta", lambda: meta_rows(session.executor, session.target.state))


def read_meta(session: Session) -> Found:
    """The committed metadata row and the view's state format."""
    props = session.properties(session.target.view)
    found_format = props.get("ivm.format")
    if found_format != FORMAT_VERSION:
        return Found(None, found_format)
    try:
        rows = _meta_rows(session)
    except Exception:  # noqa: BLE001 - a missing state table means: rebuild
        return Found(None, found_format)
    if len(rows) != 1 or rows[0][0] is None:
        return Found(None, found_format)
    # None for a metadata row edited or damaged by hand: rebuild
    return Found(StateMeta.parse(rows[0][0], props.get("ivm.sql_hash")), found_format)


def check_committed(session: Session, row: str) -> None:
    """After a refresh's commit: fail when the state's metadata row is not `row`, the one
    the commit wrote. The commit held only over the row the run read
    (`state_table.meta_unchanged`): another run of the model committed first and this one's
    changes were left out (or another committed right after it). Either way the state holds
    whole commits only and the next run refreshes from it."""
    found = _meta_rows(session)
    if len(found) != 1 or found[0][0] != row:
        raise ConcurrentCommitError(
            session.model,
            session.target.state,
            "its metadata row is not the one this run read its watermarks from",
        )


@dataclass(frozen=True)
class Pinned:
    """A build's inputs pinned: each one's head, what the state records of it
    (`base_tables.fingerprint`), and those that must be read live (`check_unmoved`)."""

    heads: dict[str, Head]
    bases: dict[str, base_tables.BaseRecord]

    @property
    def snapshots(self) -> dict[str, int | None]:
        return {r: h.snapshot for r, h in self.heads.items()}

    @property
    def live(self) -> frozenset[str]:
        return frozenset(r for r, b in self.bases.items() if b.live)


def pin(session: Session, read: Mapping[str, Sequence[str]]) -> Pinned:
    """Pin the relations of `read` (relation -> the columns read of it) as they are now."""
    heads = session.current_heads(list(read))
    bases = {
        r: base_tables.fingerprint(session.table_metadata(r, head), read[r], head.snapshot)
        for r, head in heads.items()
    }
    return Pinned(heads, bases)


def check_unmoved(session: Session, heads: dict[str, Head], live: frozenset[str]) -> None:
    """Fail (before a refresh's commit; after a build, whose state is then rebuilt by the
    next run) if a base table read live got a commit since it was pinned: the rows read
    would not be the pinned snapshot's."""
    now = session.current_heads(sorted(live), fresh=True)
    for relation in sorted(live):
        if now[relation].snapshot != heads[relation].snapshot:
            raise BaseRelationError(
                session.model,
                relation,
                "got a commit while the refresh read it (a column it reads was renamed "
                "after its last commit, so it was read live, not at its snapshot)",
                "Nothing was applied; run the model again.",
            )


def check_bases(
    session: Session, query: Query, meta: StateMeta, heads: dict[str, Head]
) -> tuple[dict[str, base_tables.TableMetadata], dict[str, base_tables.BaseRecord]]:
    """The current metadata of every base table whose metadata file changed, and what the
    next state records of each; `Rebuild` when the state cannot be trusted (`base_tables`)."""
    read = query.columns_read()
    recorded = meta.bases or {}
    changed: dict[str, base_tables.TableMetadata] = {}
    bases: dict[str, base_tables.BaseRecord] = {}
    for relation, head in heads.items():
        before = recorded.get(relation)
        if before is None:
            raise Rebuild(f"the state has no record of base table {relation}")
        if before.metadata == head.metadata:
            bases[relation] = before
            continue
        try:
            now = session.table_metadata(relation, head)
        except BaseRelationError as e:  # rebuild, and say why
            raise Rebuild(str(e)) from e
        reason = base_tables.untrusted(relation, before, now, read[relation])
        if reason is not None:
            raise Rebuild(reason)
        changed[relation] = now
        bases[relation] = base_tables.fingerprint(now, read[relation], head.snapshot)
    return changed, bases
