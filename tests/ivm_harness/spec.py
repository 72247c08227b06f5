"""Declarative pieces of the differential harness: columns, base tables and query families.

A family is a named model SELECT over one or more base tables.  Tables are declared once and
shared by every family that lists them (same name means the same table, so two families may
not declare different tables under one name).  Data and changes are generated per table, so
the generator knobs live on `Table` and `Col`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

#: Spark column types the data generator knows.
SUPPORTED_TYPES: tuple[str, ...] = (
    "int",
    "bigint",
    "string",
    "decimal(10,2)",
    "double",
    "date",
    "boolean",
)

_IDENT = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Col:
    """One column of a base table.

    Attributes:
        name: column name (lower case identifier).
        type: one of `SUPPORTED_TYPES`.
        key: a key column draws from a small domain, so groups collide and join keys match;
            a value column draws from a wide domain (negative values, fractions).
        nullable: whether the column may hold NULL (then it does, with `Table.null_rate`).
        domain: explicit values to draw from (overrides the default domain of the type).
    """

    name: str
    type: str
    key: bool = False
    nullable: bool = True
    domain: tuple[Any, ...] | None = None

    def __post_init__(self) -> None:
        """Validate name and type early, at import time of the family list."""
        if not _IDENT.match(self.name):
            raise ValueError(f"bad column name {self.name!r}")
        if self.type not in SUPPORTED_TYPES:
            raise ValueError(f"column {self.name}: type {self.type!r} not in {SUPPORTED_TYPES}")

    @property
    def ddl(self) -> str:
        """Column definition for CREATE TABLE."""
        return f"{self.name} {self.type}" + ("" if self.nullable else " NOT NULL")


@dataclass(frozen=True)
class Table:
    """A base table (an Iceberg table in the harness's base schema).

    Attributes:
        name: table name, also the source table name (`source('base', name)`).
        cols: the columns, in order.
        initial_rows: (min, max) number of generated rows before the first build.
        null_rate: probability of NULL in a nullable column of a generated row.
        dup_rate: probability that a generated row is a copy of an earlier one.
        max_rows: above this many rows the change generator prefers deletes.
        properties: Iceberg table properties (e.g. merge-on-read write modes).
    """

    name: str
    cols: tuple[Col, ...]
    initial_rows: tuple[int, int] = (20, 40)
    null_rate: float = 0.15
    dup_rate: float = 0.15
    max_rows: int = 80
    properties: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        """Validate the table name and that there is something to group by and to sum."""
        if not _IDENT.match(self.name):
            raise ValueError(f"bad table name {self.name!r}")
        if not self.cols:
            raise ValueError(f"table {self.name} has no columns")

    @property
    def key_cols(self) -> tuple[Col, ...]:
        """Columns with a small domain."""
        return tuple(c for c in self.cols if c.key)

    @property
    def value_cols(self) -> tuple[Col, ...]:
        """Columns with a wide domain."""
        return tuple(c for c in self.cols if not c.key)

    def ddl(self, schema: str) -> str:
        """CREATE TABLE statement for this table in `schema`."""
        cols = ", ".join(c.ddl for c in self.cols)
        props = ""
        if self.properties:
            props = " TBLPROPERTIES (" + ", ".join(f"'{k}'='{v}'" for k, v in self.properties) + ")"
        return f"CREATE TABLE {schema}.{self.name} ({cols}) USING iceberg{props}"


@dataclass(frozen=True)
class Family:
    """A query family: one dbt model checked against a fresh run of its SELECT every round.

    Attributes:
        name: model name (unique, lower case identifier); also the pytest id.
        tables: the base tables the SELECT reads.
        sql: the model SELECT; base tables are referenced as `{{ source('base', '<table>') }}`.
        config: extra dbt config for the model (rendered into `config(...)`).
        tags: free-form labels (e.g. the issue that introduced the family).
        upstream: models the SELECT reads with `{{ ref('<name>') }}`, each (name,
            materialization, SELECT): dbt views, ephemeral models, other ivm models. They are
            run with the family's model every round (dbt re-creates the views); names start
            with the family's name, so families never share one.
    """

    name: str
    tables: tuple[Table, ...]
    sql: str
    config: dict[str, Any] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    upstream: tuple[tuple[str, str, str], ...] = ()

    @property
    def models(self) -> list[str]:
        """The family's own model and its upstream models, by name."""
        return [self.name, *(name for name, _, _ in self.upstream)]

    def __post_init__(self) -> None:
        """Check the name and that the SELECT only names sources it declares."""
        if not _IDENT.match(self.name):
            raise ValueError(f"bad family name {self.name!r}")
        for name, _, _ in self.upstream:
            if not name.startswith(f"{self.name}__") or not _IDENT.match(name):
                raise ValueError(
                    f"family {self.name}: upstream model {name!r} not named {self.name}__*"
                )
        declared = {t.name for t in self.tables}
        text = " ".join([self.sql, *(select for _, _, select in self.upstream)])
        used = set(re.findall(r"source\(\s*'base'\s*,\s*'([a-z0-9_]+)'\s*\)", text))
        if not used:
            raise ValueError(f"family {self.name}: SELECT references no source('base', ...)")
        if used - declared:
            raise ValueError(f"family {self.name}: undeclared tables {sorted(used - declared)}")


def collect_tables(families: Sequence[Family]) -> list[Table]:
    """The distinct tables of `families`, in first-seen order; conflicting duplicates fail."""
    seen: dict[str, Table] = {}
    for fam in families:
        for t in fam.tables:
            other = seen.setdefault(t.name, t)
            if other != t:
                raise ValueError(f"two different tables are both named {t.name!r}")
    return list(seen.values())


def check_unique_names(families: Sequence[Family]) -> None:
    """Fail when two families share a name (they would share a model)."""
    names = [f.name for f in families]
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise ValueError(f"duplicate family names: {dups}")
