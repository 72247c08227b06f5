"""Random base data and random changes, as Spark SQL text.

Everything is driven by `random.Random` instances seeded from strings such as
`"<seed>/init/<table>"` or `"<seed>/<round>/<table>"`: the data of one table does not depend
on which other tables or families take part, so `pytest -k <family>` with the same
`IVM_SEED` replays the same data for that family's tables.

Changes are generated one statement at a time from the table's current rows (read back from
Spark before each statement), so predicates hit existing values: whole groups get deleted,
group keys get updated to NULL and back, existing rows get exact duplicates.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from .spec import Col, Table

Row = tuple[Any, ...]

_KEY_DOMAINS: dict[str, tuple[Any, ...]] = {
    "int": (-1, 0, 1, 2),
    "bigint": (-3_000_000_000, 0, 7, 5_000_000_000),
    "string": ("a", "b", "c", ""),
    "decimal(10,2)": (Decimal("-2.25"), Decimal("0.00"), Decimal("1.50")),
    "double": (-1.25, 0.5, 3.0),
    "date": (dt.date(1999, 12, 31), dt.date(2024, 1, 1), dt.date(2024, 2, 29)),
    "boolean": (True, False),
}

_STRING_VALUES: tuple[str, ...] = ("x", "y", "Z", "it's", "a b", "ü", "back\\slash", "")

_CENT = Decimal("0.01")


# --------------------------------------------------------------------------------------------
# values and literals
# --------------------------------------------------------------------------------------------


def random_value(col: Col, rng: random.Random, null_rate: float) -> Any:
    """A random value for `col`: NULL with `null_rate` if nullable, else from its domain."""
    if col.nullable and rng.random() < null_rate:
        return None
    if col.domain is not None:
        return rng.choice(col.domain)
    if col.key:
        return rng.choice(_KEY_DOMAINS[col.type])
    t = col.type
    if t == "int":
        return rng.randint(-50, 50)
    if t == "bigint":
        return rng.randint(-4_000_000_000, 4_000_000_000)
    if t == "string":
        return rng.choice(_STRING_VALUES)
    if t == "decimal(10,2)":
        return (Decimal(rng.randint(-99_999, 99_999)) / 100).quantize(_CENT)
    if t == "double":
        pick = rng.random()
        if pick < 0.6:
            return rng.uniform(-1000.0, 1000.0)
        if pick < 0.8:
            return rng.choice((0.1, -0.3, 2.5, 1e-3, -7.0, 0.0, -0.0))
        return rng.uniform(-1.0, 1.0) * 10 ** rng.randint(-4, 3)
    if t == "date":
        return dt.date(2024, 1, 1) + dt.timedelta(days=rng.randint(-400, 400))
    if t == "boolean":
        return rng.random() < 0.5
    raise ValueError(f"no generator for type {t}")  # pragma: no cover - guarded by Col


def sql_literal(value: Any, type_: str) -> str:
    """Spark SQL literal of `value` typed as `type_` (NULLs are cast, so VALUES lists type)."""
    if value is None:
        return f"CAST(NULL AS {type_.upper()})"
    if type_ == "int":
        return str(int(value))
    if type_ == "bigint":
        return f"{int(value)}L"
    if type_ == "string":
        escaped = str(value).replace("\\", "\\\\").replace("'", "\\'")
        return f"'{escaped}'"
    if type_ == "decimal(10,2)":
        return f"CAST('{Decimal(value).quantize(_CENT)}' AS DECIMAL(10,2))"
    if type_ == "double":
        return f"CAST('{float(value)!r}' AS DOUBLE)"
    if type_ == "date":
        return f"DATE'{value.isoformat()}'"
    if type_ == "boolean":
        return "TRUE" if value else "FALSE"
    raise ValueError(f"no literal for type {type_}")


def random_row(table: Table, rng: random.Random) -> Row:
    """A fresh random row of `table`."""
    return tuple(random_value(c, rng, table.null_rate) for c in table.cols)


def initial_rows(table: Table, rng: random.Random) -> list[Row]:
    """The rows a table holds before the first build, with duplicates and NULLs."""
    n = rng.randint(*table.initial_rows)
    rows: list[Row] = []
    for _ in range(n):
        if rows and rng.random() < table.dup_rate:
            rows.append(rng.choice(rows))
        else:
            rows.append(random_row(table, rng))
    return rows


def insert_sql(table: Table, schema: str, rows: Sequence[Row]) -> str:
    """INSERT INTO ... VALUES for `rows`."""
    values = ",\n  ".join(
        "(" + ", ".join(sql_literal(v, c.type) for v, c in zip(r, table.cols, strict=True)) + ")"
        for r in rows
    )
    return f"INSERT INTO {schema}.{table.name} VALUES\n  {values}"


# --------------------------------------------------------------------------------------------
# predicates
# --------------------------------------------------------------------------------------------


def _eq(col: Col, value: Any) -> str:
    """`col = value`, or `col IS NULL` for NULL (a plain `= NULL` would match nothing)."""
    if value is None:
        return f"{col.name} IS NULL"
    return f"{col.name} = {sql_literal(value, col.type)}"


def _pick_existing(col: Col, idx: int, rows: Sequence[Row], rng: random.Random) -> Any:
    """A value of column `idx` taken from a random existing row."""
    return rng.choice(rows)[idx]


def _predicate(table: Table, rows: Sequence[Row], rng: random.Random) -> str:
    """A WHERE predicate that matches some existing rows (a group, a range, a row...)."""
    cols = table.cols
    keys = [i for i, c in enumerate(cols) if c.key] or list(range(len(cols)))
    pick = rng.random()
    if pick < 0.4:  # one group
        i = rng.choice(keys)
        return _eq(cols[i], _pick_existing(cols[i], i, rows, rng))
    if pick < 0.55 and len(keys) >= 2:  # a two-key group
        i, j = rng.sample(keys, 2)
        row = rng.choice(rows)
        return f"{_eq(cols[i], row[i])} AND {_eq(cols[j], row[j])}"
    orderable = [i for i, c in enumerate(cols) if c.type != "boolean"]
    i = rng.choice(orderable or list(range(len(cols))))
    col = cols[i]
    value = _pick_existing(col, i, rows, rng)
    if value is None or col.type == "boolean":
        return _eq(col, value)
    op = rng.choice(("<", "<=", ">", ">="))
    return f"{col.name} {op} {sql_literal(value, col.type)}"


def _full_row_match(table: Table, row: Row) -> str:
    """A predicate matching exactly the copies of `row` (null-safe)."""
    return " AND ".join(
        f"{c.name} <=> {sql_literal(v, c.type)}" for c, v in zip(table.cols, row, strict=True)
    )


def _expr_update(col: Col, rng: random.Random) -> str | None:
    """An expression over the column's old value (`i + 3`, `-x`, `NOT f`), if the type has one."""
    t = col.type
    if t in ("int", "bigint"):
        return rng.choice((f"{col.name} + {rng.randint(-5, 5)}", f"-{col.name}"))
    if t == "decimal(10,2)":
        return rng.choice((f"{col.name} + 1.25", f"-{col.name}", f"{col.name} - 0.01"))
    if t == "double":
        return rng.choice((f"{col.name} * -1.5", f"{col.name} + 0.1", f"{col.name} / 3"))
    if t == "boolean":
        return f"NOT {col.name}"
    if t == "date":
        return f"date_add({col.name}, {rng.randint(-3, 3)})"
    return None


# --------------------------------------------------------------------------------------------
# change statements
# --------------------------------------------------------------------------------------------

StatementMaker = Callable[[Table, str, Sequence[Row], random.Random], "str | None"]


def _insert_new(table: Table, schema: str, rows: Sequence[Row], rng: random.Random) -> str:
    """Insert 1-5 fresh random rows."""
    return insert_sql(table, schema, [random_row(table, rng) for _ in range(rng.randint(1, 5))])


def _insert_dup(table: Table, schema: str, rows: Sequence[Row], rng: random.Random) -> str:
    """Insert exact copies of existing rows (sometimes the same row twice)."""
    picked = [rng.choice(rows) for _ in range(rng.randint(1, 3))]
    if rng.random() < 0.3:
        picked.append(picked[0])
    return insert_sql(table, schema, picked)


def _update_value(table: Table, schema: str, rows: Sequence[Row], rng: random.Random) -> str:
    """Set one or two columns to new values (or NULL, or an expression) where a predicate holds."""
    cols = list(table.value_cols) or list(table.cols)
    sets = []
    for col in rng.sample(cols, min(len(cols), rng.choice((1, 1, 2)))):
        expr = _expr_update(col, rng) if rng.random() < 0.35 else None
        if expr is None:
            expr = sql_literal(random_value(col, rng, table.null_rate), col.type)
        sets.append(f"{col.name} = {expr}")
    return (
        f"UPDATE {schema}.{table.name} SET {', '.join(sets)} WHERE {_predicate(table, rows, rng)}"
    )


def _update_key_to_null(
    table: Table, schema: str, rows: Sequence[Row], rng: random.Random
) -> str | None:
    """Move an existing group's key to NULL."""
    keys = [(i, c) for i, c in enumerate(table.cols) if c.key and c.nullable]
    if not keys:
        return None
    i, col = rng.choice(keys)
    value = _pick_existing(col, i, rows, rng)
    if value is None:
        return None
    return f"UPDATE {schema}.{table.name} SET {col.name} = NULL WHERE {_eq(col, value)}"


def _update_key_from_null(
    table: Table, schema: str, rows: Sequence[Row], rng: random.Random
) -> str | None:
    """Move the NULL group of a key back to a (possibly existing) non-NULL key."""
    keys = [(i, c) for i, c in enumerate(table.cols) if c.key and any(r[i] is None for r in rows)]
    if not keys:
        return None
    _, col = rng.choice(keys)
    value = random_value(col, rng, 0.0)
    return (
        f"UPDATE {schema}.{table.name} SET {col.name} = {sql_literal(value, col.type)} "
        f"WHERE {col.name} IS NULL"
    )


def _update_key_move(table: Table, schema: str, rows: Sequence[Row], rng: random.Random) -> str:
    """Change key values of matching rows (merging groups, splitting groups)."""
    keys = [c for c in table.cols if c.key] or list(table.cols)
    col = rng.choice(keys)
    value = random_value(col, rng, table.null_rate)
    return (
        f"UPDATE {schema}.{table.name} SET {col.name} = {sql_literal(value, col.type)} "
        f"WHERE {_predicate(table, rows, rng)}"
    )


def _update_row(table: Table, schema: str, rows: Sequence[Row], rng: random.Random) -> str:
    """Rewrite every column of one existing row (and of all its duplicates)."""
    target = rng.choice(rows)
    new = random_row(table, rng)
    sets = ", ".join(
        f"{c.name} = {sql_literal(v, c.type)}" for c, v in zip(table.cols, new, strict=True)
    )
    return f"UPDATE {schema}.{table.name} SET {sets} WHERE {_full_row_match(table, target)}"


def _delete_group(table: Table, schema: str, rows: Sequence[Row], rng: random.Random) -> str:
    """Delete a whole group of one key (including the NULL group)."""
    keys = [(i, c) for i, c in enumerate(table.cols) if c.key] or list(enumerate(table.cols))
    i, col = rng.choice(keys)
    return f"DELETE FROM {schema}.{table.name} WHERE {_eq(col, _pick_existing(col, i, rows, rng))}"


def _delete_pred(table: Table, schema: str, rows: Sequence[Row], rng: random.Random) -> str:
    """Delete by a random predicate."""
    return f"DELETE FROM {schema}.{table.name} WHERE {_predicate(table, rows, rng)}"


def _delete_row(table: Table, schema: str, rows: Sequence[Row], rng: random.Random) -> str:
    """Delete one row and all its duplicates."""
    return f"DELETE FROM {schema}.{table.name} WHERE {_full_row_match(table, rng.choice(rows))}"


def _delete_extremes(
    table: Table, schema: str, rows: Sequence[Row], rng: random.Random
) -> str | None:
    """Delete the rows holding one column's one or two smallest (or largest) values. Those
    values are the extreme of every group they are in, however a model groups or joins the
    table, so every MIN/MAX list over the column loses its first values: a list that was
    wrong about the values after them (a build's, a recompute's) shows in the relation."""
    columns = [(i, c) for i, c in enumerate(table.cols) if c.type != "boolean"]
    if not columns:
        return None
    i, col = rng.choice(columns)
    present = {_rank(row[i]): row[i] for row in rows if row[i] is not None}
    if not present:
        return None
    largest = rng.random() < 0.5
    ends = sorted(present, reverse=largest)[: rng.randint(1, 2)]
    where = " OR ".join(_eq(col, present[end]) for end in ends)
    return f"DELETE FROM {schema}.{table.name} WHERE {where}"


def _rank(value: Any) -> tuple[bool, Any]:
    """A non-NULL value's place in Spark's order: NaN after every other double (and equal
    to itself, as Spark compares it), -0.0 the same value as 0.0.

    >>> sorted([_rank(1.0), _rank(float("nan")), _rank(-0.0)])[-1][0]
    True
    """
    if isinstance(value, float) and math.isnan(value):
        return (True, 0.0)
    return (False, value + 0.0 if isinstance(value, float) else value)


def _delete_all(table: Table, schema: str, rows: Sequence[Row], rng: random.Random) -> str:
    """Empty the table."""
    return f"DELETE FROM {schema}.{table.name}"


#: (maker, weight, is_delete) - deletes get more weight when a table grew past `max_rows`.
_MAKERS: tuple[tuple[StatementMaker, float, bool], ...] = (
    (_insert_new, 3.0, False),
    (_insert_dup, 2.0, False),
    (_update_value, 2.5, False),
    (_update_key_to_null, 1.5, False),
    (_update_key_from_null, 1.0, False),
    (_update_key_move, 1.0, False),
    (_update_row, 1.0, False),
    (_delete_group, 1.5, True),
    (_delete_pred, 1.5, True),
    (_delete_row, 0.7, True),
    (_delete_extremes, 1.5, True),
    (_delete_all, 0.3, True),
)


def change_statement(table: Table, schema: str, rows: Sequence[Row], rng: random.Random) -> str:
    """One random INSERT / UPDATE / DELETE for `table`, given its current `rows`.

    An empty table gets a bulk insert (so it refills after being emptied).
    """
    if not rows:
        n = rng.randint(max(1, table.initial_rows[0] // 2), table.initial_rows[1])
        return insert_sql(table, schema, [random_row(table, rng) for _ in range(n)])
    too_big = len(rows) > table.max_rows
    weights = [w * (4.0 if (too_big and is_del) else 1.0) for _, w, is_del in _MAKERS]
    while True:
        (maker, _, _) = rng.choices(_MAKERS, weights=weights)[0]
        sql = maker(table, schema, rows, rng)
        if sql is not None:
            return sql


def table_rng(seed: int, round_no: int | str, table: Table) -> random.Random:
    """The random stream for one table in one round (independent of the other tables)."""
    return random.Random(f"{seed}/{round_no}/{table.name}")
