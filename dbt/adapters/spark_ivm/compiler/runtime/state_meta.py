"""state_meta: the metadata row a state commits with its data, as read back.

The row (`render.meta_sql`) is JSON written in the same Iceberg commit as the state's rows:
the digest of the SQL it was built from, per base relation the snapshot it reflects (the
watermark) and what it trusts of that table, the result columns, and the planning facts. A
row that does not parse is no state at all: the model rebuilds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from dbt.adapters.spark_ivm.compiler.plan import Plan


@dataclass(frozen=True)
class StateMeta:
    """A state's committed metadata row.

    >>> row = '{"sql_hash": "ab", "watermarks": {"db.t": "7", "db.v": null}, "bases": {}}'
    >>> meta = StateMeta.parse(row, view_sql_hash="ab")
    >>> meta.watermarks, meta.bases, meta.facts
    ({'db.t': 7, 'db.v': None}, {}, None)
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
    bases: dict[str, Any] | None
    #: The result columns, `[[name, type], ...]`, as the state was planned.
    outputs: Any
    #: The row as written, compared with the next one to skip a commit that changes nothing.
    recorded: dict[str, Any]

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

    def base(self, relation: str) -> dict[str, Any]:
        """What the state recorded of `relation` (empty when nothing)."""
        return (self.bases or {}).get(relation) or {}

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
        return cls(
            sql_hash=recorded.get("sql_hash"),
            view_sql_hash=view_sql_hash,
            watermarks=watermarks,
            bases=bases if isinstance(bases, dict) else None,
            outputs=recorded.get("outputs"),
            recorded=recorded,
        )


def written(
    digest: str,
    the_plan: Plan,
    watermarks: dict[str, int | None],
    bases: dict,
    runs: list[dict[str, Any]],
) -> str:
    """The metadata row a build or refresh commits: the SQL's digest, the watermarks, what
    it trusts of each base, the result columns, the planning facts and the state's last runs
    (`cost.py`)."""
    outputs = [list(c) for c in zip(the_plan.output_names, the_plan.output_types)]
    return json.dumps(
        {
            "runs": runs,
            "sql_hash": digest,
            "watermarks": watermarks,
            "bases": bases,
            "outputs": outputs,
            "facts": {
                "schemas": {
                    r: [list(c) for c in the_plan.query.columns_of(r)]
                    for r in the_plan.query.relations
                },
                "outputs": outputs,
                "arg_types": the_plan.arg_types,
            },
        },
        sort_keys=True,
    )
