"""state_meta: the metadata row a state commits with its data, as read back.

The row (`state_table.meta_sql`) is JSON written in the same Iceberg commit as the state's rows:
the digest of the SQL it was built from, per base relation the snapshot it reflects (the
watermark) and what it trusts of that table, the result columns, and the planning facts. A
row that does not parse is no state at all: the model rebuilds.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Self

from dbt.adapters.spark_ivm.compiler.frontend.canonical import comparable_sql
from dbt.adapters.spark_ivm.compiler.plan import Plan
from dbt.adapters.spark_ivm.compiler.runtime.base_tables import BaseRecord

#: The metadata row's key for the base snapshots a state rebuilt past its earlier states
#: reflects (`from_bases.py`).
DETACHED = "detached"


def _sha(version: str, text: str) -> str:
    return hashlib.sha256(f"{version}\n{text}".encode()).hexdigest()[:16]


@lru_cache(maxsize=64)
def _digests(text: str, version: str) -> tuple[str, str]:
    """The canonical and raw-text digests of `text`, computed once a process: a staged
    model's run asks for its SQL's six times, and the canonical form is a sqlglot parse."""
    return _sha(version, comparable_sql(text)), _sha(version, text.strip())


class SqlDigest(str):
    """The digest a state records of the SQL it is built from (`ivm.sql_hash` on its view,
    `sql_hash` in its metadata row): of the SQL's canonical form (`canonical.py`), so a
    comment or whitespace is no change; of the raw text where sqlglot cannot parse it.
    `legacy` is the digest of the raw text, which states built before the canonical digest
    record: such a state is of the same SQL too, and is not rebuilt for the formula's sake.

    >>> digest = SqlDigest.of("select k  from db.t -- note", "5")
    >>> digest == SqlDigest.of("SELECT k FROM db.t", "5"), digest.legacy == digest
    (True, False)
    >>> digest.accepts(digest.legacy), digest.accepts(SqlDigest.of("select K from db.t", "5"))
    (True, False)
    """

    legacy: str

    def __new__(cls, digest: str, legacy: str) -> Self:
        made = super().__new__(cls, digest)
        made.legacy = legacy
        return made

    @classmethod
    def of(cls, text: str, version: str) -> SqlDigest:
        """The digest of `text` for state format `version`."""
        return cls(*_digests(text, version))

    def accepts(self, recorded: str | None) -> bool:
        """Is `recorded` (a digest a state records) this SQL's, by either formula?"""
        return recorded is not None and recorded in (str(self), self.legacy)


@dataclass(frozen=True)
class StateMeta:
    """A state's committed metadata row.

    >>> row = ('{"sql_hash": "ab", "watermarks": {"db.t": "7", "db.v": null}, '
    ...        '"bases": {"db.t": {"metadata": "v3.json", "bytes": 10}}}')
    >>> meta = StateMeta.parse(row, view_sql_hash="ab")
    >>> meta.watermarks, meta.base("db.t").metadata, meta.base("db.v").metadata, meta.facts
    ({'db.t': 7, 'db.v': None}, 'v3.json', None, None)
    >>> StateMeta.parse('{"sql_hash": "ab"}', None) is None  # no watermarks: damaged
    True
    """

    sql_hash: str | None
    #: The digest in the model view's properties (`ivm.sql_hash`): the two must agree.
    view_sql_hash: str | None
    #: Per base relation, the snapshot the state reflects (None: the relation was empty).
    watermarks: dict[str, int | None]
    #: Per base relation, what the state trusts of it (`base_tables.fingerprint`); None when
    #: the row has none that can be read.
    bases: dict[str, BaseRecord] | None
    #: The result columns, `[[name, type], ...]`, as the state was planned.
    outputs: Any
    #: The row as written, compared with the next one to skip a commit that changes nothing.
    recorded: dict[str, Any]
    #: The row's text as read: the refresh's commit holds only while it is still the row.
    text: str

    @property
    def detached(self) -> bool:
        """Was the state rebuilt from the base tables past its earlier states
        (`from_bases.py`), so that its watermarks of their tables say nothing of its rows?

        >>> StateMeta.parse('{"watermarks": {}, "detached": {"db.t": 7}}', None).detached
        True
        """
        return self.recorded.get(DETACHED) is not None

    @property
    def detached_at(self) -> dict[str, int | None] | None:
        """The snapshots of the relations it read past its earlier states (None: not
        detached, or not readable).

        >>> StateMeta.parse('{"watermarks": {}, "detached": {"db.t": "7"}}', None).detached_at
        {'db.t': 7}
        """
        found = self.recorded.get(DETACHED)
        try:
            return {str(r): None if s is None else int(s) for r, s in found.items()}
        except (AttributeError, TypeError, ValueError):
            return None

    @property
    def facts(self) -> dict[str, Any] | None:
        """The planning facts the row recorded (`facts.recorded_facts`)."""
        found = self.recorded.get("facts")
        return found if isinstance(found, dict) else None

    def moved(self, new_row: str) -> bool:
        """Does `new_row` (`written`) say more than this row, the runs' record aside? (A
        refresh that finds nothing to apply commits only then.)"""
        new = json.loads(new_row)
        return {**new, "runs": None} != {**self.recorded, "runs": None}

    def built_from(self, digest: SqlDigest) -> bool:
        """Do the row and the view both record the SQL whose digest is `digest` (by either
        formula, each record on its own: a refresh writes the new digest to the row while
        the view it keeps records the old)?"""
        return digest.accepts(self.sql_hash) and digest.accepts(self.view_sql_hash)

    def base(self, relation: str) -> BaseRecord:
        """What the state recorded of `relation` (all empty when nothing)."""
        found = (self.bases or {}).get(relation)
        return found if found is not None else BaseRecord.of(None)

    @classmethod
    def parse(cls, text: str, view_sql_hash: str | None) -> StateMeta | None:
        """The row's JSON read, or None when it is damaged (edited by hand, cut)."""
        try:
            recorded = json.loads(text)
            watermarks = {
                str(k): None if v is None else int(v) for k, v in recorded["watermarks"].items()
            }
        except (ValueError, KeyError, TypeError, AttributeError):
            return None
        bases = recorded.get("bases")
        try:
            records = (
                {str(r): BaseRecord.of(b) for r, b in bases.items()}
                if isinstance(bases, dict)
                else None
            )
        except (ValueError, TypeError, AttributeError, IndexError):
            records = None  # damaged: the refresh rebuilds ("no record of base table ..")
        return cls(
            sql_hash=recorded.get("sql_hash"),
            view_sql_hash=view_sql_hash,
            watermarks=watermarks,
            bases=records,
            outputs=recorded.get("outputs"),
            recorded=recorded,
            text=text,
        )


def written(
    digest: str,
    plan: Plan,
    watermarks: dict[str, int | None],
    bases: dict[str, BaseRecord],
    runs: list[dict[str, Any]],
    detached: dict[str, int | None] | None = None,
) -> str:
    """The metadata row a build or refresh commits: the SQL's digest, the watermarks, what
    it trusts of each base, the result columns, the planning facts and the state's last runs
    (`cost.py`); for a state rebuilt past its earlier states, the base snapshots it reflects
    past them (`detached`, `from_bases.py`)."""
    outputs = [list(c) for c in zip(plan.output_names, plan.output_types)]
    extra = {DETACHED: detached} if detached is not None else {}
    return json.dumps(
        {
            **extra,
            "runs": runs,
            "sql_hash": digest,
            "watermarks": watermarks,
            "bases": {relation: b.as_json() for relation, b in bases.items()},
            "outputs": outputs,
            "facts": {
                "schemas": {
                    r: [list(c) for c in plan.query.columns_of(r)] for r in plan.query.relations
                },
                "outputs": outputs,
                "arg_types": plan.arg_types,
            },
        },
        sort_keys=True,
    )
