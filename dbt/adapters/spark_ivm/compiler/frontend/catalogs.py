"""catalogs: base relations of several catalogs in one model, as sqlglot's schema reads them.

A model names most relations `db.table`, resolved in the session's current catalog (where its
view and states live), and may name others `catalog.db.table` (`analyze.relation_key`). sqlglot
resolves a column through a schema of one depth for all tables, and a two-part name in a
three-level schema is ambiguous where two catalogs hold the same `db.table`. So where any
relation names a catalog, the two-part ones are placed in a stand-in catalog (`HERE`) while
sqlglot reads the tree, and the stand-in is taken off again: the SQL the compiler renders
names exactly the catalogs the model named.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TypeVar

from sqlglot import exp

#: The stand-in catalog of two-part names while sqlglot reads a model with three-part ones.
HERE = "__ivm_here__"

T = TypeVar("T")


def nested_schema(
    schemas: Mapping[str, Sequence[tuple[str, str]]], typed: Callable[[str], T]
) -> dict:
    """sqlglot's nested schema of the base relations' columns (`relation -> [(column, Spark
    type)]`), each type made by `typed`; three levels where any relation names a catalog.

    >>> nested_schema({"db.t": [("k", "int")]}, str)
    {'db': {'t': {'k': 'int'}}}
    >>> nested_schema({"db.t": [("k", "int")], "lake.db.t": [("v", "string")]}, str)
    {'__ivm_here__': {'db': {'t': {'k': 'int'}}}, 'lake': {'db': {'t': {'v': 'string'}}}}
    """
    three = any(key.count(".") == 2 for key in schemas)
    nested: dict = {}
    for key, columns in schemas.items():
        parts = key.split(".")
        if three and len(parts) == 2:
            parts = [HERE, *parts]
        level = nested
        for part in parts[:-1]:
            level = level.setdefault(part, {})
        typed_columns = level.setdefault(parts[-1], {})
        for column, dtype in columns:
            typed_columns[column] = typed(dtype)
    return nested


def names_catalogs(schemas: Mapping[str, object]) -> bool:
    """Does any base relation name its catalog?

    >>> names_catalogs({"db.t": []}), names_catalogs({"db.t": [], "lake.db.u": []})
    (False, True)
    """
    return any(key.count(".") == 2 for key in schemas)


def strip_here(tree: exp.Expression) -> exp.Expression:
    """`tree` with the stand-in catalog taken off every table (in place).

    >>> import sqlglot
    >>> strip_here(sqlglot.parse_one("select * from __ivm_here__.db.t join lake.db.t on true")).sql()
    'SELECT * FROM db.t JOIN lake.db.t ON TRUE'
    """
    for table in tree.find_all(exp.Table):
        if table.catalog == HERE:
            table.set("catalog", None)
    return tree


@contextmanager
def two_part_names_here(tree: exp.Expression, active: bool) -> Iterator[None]:
    """While inside, every `db.table` of `tree` names the stand-in catalog (when `active`:
    the schema has three levels), so sqlglot finds it without ambiguity.

    >>> import sqlglot
    >>> tree = sqlglot.parse_one("select * from db.t join lake.db.t on true")
    >>> with two_part_names_here(tree, True):
    ...     print(tree.sql())
    SELECT * FROM __ivm_here__.db.t JOIN lake.db.t ON TRUE
    >>> tree.sql()
    'SELECT * FROM db.t JOIN lake.db.t ON TRUE'
    """
    if active:
        for table in tree.find_all(exp.Table):
            if table.db and not table.catalog:
                table.set("catalog", exp.to_identifier(HERE))
    try:
        yield
    finally:
        if active:
            strip_here(tree)
