"""The differential check: a relation against a fresh run of its model's SELECT.

Column names, Spark types and rows as bags (doubles within a tolerance, `compare.py`),
everything read through SQL on a dbt connection of the models' profile, so the check reads
what a user of that connection reads, session or thrift alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .compare import BagDiff, compare_bags, format_diff
from .connection import SqlConnection

#: Result columns a relation must not show (the state's helper columns).
HIDDEN_PREFIX = "__ivm_"


@dataclass
class CheckResult:
    """Comparison of a relation with a fresh run of its SELECT."""

    problems: list[str]
    columns: list[str]
    diff: BagDiff | None

    @property
    def ok(self) -> bool:
        """True when nothing differs."""
        return not self.problems


FLOAT_TYPES = ("double", "float")


#: Which side of `_read_both`'s one query a row comes from (not a name a model can use:
#: hidden columns start with `__ivm`, and the check rejects those).
SIDE = "__ivm_check_side"


def _each_side(
    conn: SqlConnection, relation: str, sql: str, read: Callable[[str], Any]
) -> tuple[Any, Any] | CheckResult:
    """`read` of a fresh run of `sql` and of `relation`, or the check's result naming the
    side that fails."""
    try:
        expected = read(sql)
    except Exception as exc:  # noqa: BLE001 - report whatever Spark says
        return CheckResult([f"the model SELECT itself fails: {exc}"], [], None)
    try:
        actual = read(f"SELECT * FROM {relation}")
    except Exception as exc:  # noqa: BLE001
        return CheckResult([f"cannot read relation {relation}: {exc}"], [], None)
    return expected, actual


def _read_both(
    conn: SqlConnection, relation: str, sql: str, same_columns: bool
) -> tuple[list[tuple], list[tuple]] | CheckResult:
    """The rows of a fresh run of `sql` and of `relation`. Where both have the same column
    names and Spark types, one query reads both (UNION ALL then converts no value, and a
    statement costs the same on tiny data whatever it reads); else two, so that each
    side's error is its own."""
    if same_columns:
        try:
            both = conn.query(
                f"SELECT 0 AS {SIDE}, * FROM (\n{sql}\n) AS expected "
                f"UNION ALL SELECT 1 AS {SIDE}, * FROM {relation}"
            )
        except Exception:  # noqa: BLE001, S110 - the two reads below say which side fails
            pass
        else:
            return [r[1:] for r in both if r[0] == 0], [r[1:] for r in both if r[0] == 1]
    return _each_side(conn, relation, sql, conn.query)


def check_relation(conn: SqlConnection, relation: str, sql: str) -> CheckResult:
    """Compare `relation` with a fresh run of `sql`: columns, Spark types, rows as bags.

    Everything goes through SQL on `conn` (a dbt connection of the models' profile), so the
    check reads what a user of that connection reads, session or thrift alike.
    """
    problems: list[str] = []
    schemas = _each_side(conn, relation, sql, conn.describe)
    if isinstance(schemas, CheckResult):
        return schemas
    exp_schema, act_schema = schemas
    read = _read_both(conn, relation, sql, exp_schema == act_schema)
    if isinstance(read, CheckResult):
        return read
    expected, actual = read
    exp_cols = [c.name for c in exp_schema]
    act_cols = [c.name for c in act_schema]
    hidden = [c for c in act_cols if c.lower().startswith(HIDDEN_PREFIX)]
    if hidden:
        problems.append(f"relation shows hidden columns: {hidden}")
    if exp_cols != act_cols:
        problems.append(f"column names differ:\n  SELECT:   {exp_cols}\n  relation: {act_cols}")
    else:
        for ec, ac in zip(exp_schema, act_schema, strict=True):
            if ec.type != ac.type:
                problems.append(f"column {ec.name}: SELECT type {ec.type}, relation type {ac.type}")
    diff: BagDiff | None = None
    if len(exp_cols) == len(act_cols):
        floats = sorted(
            {i for i, c in enumerate(exp_schema) if c.type in FLOAT_TYPES}
            | {i for i, c in enumerate(act_schema) if c.type in FLOAT_TYPES}
        )
        diff = compare_bags(expected, actual, floats)
        if not diff.equal:
            problems.append(
                f"rows differ (SELECT: {len(expected)} rows, relation: {len(actual)} rows)\n"
                + format_diff(exp_cols, diff)
            )
    elif expected or actual:
        problems.append(
            f"cannot compare rows of different arity; SELECT returns {len(expected)} rows, "
            f"relation holds {len(actual)}"
        )
    return CheckResult(problems, exp_cols, diff)
