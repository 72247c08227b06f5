"""SQL templates filled with ASTs: `template("SUM(:x * :w)", x=col, w=weight)`.

Templates are parsed once by sqlglot; `:name` placeholders are replaced by copies of the given
expressions, so composition happens on trees, never on strings.
"""

from __future__ import annotations

from functools import lru_cache

import sqlglot
from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.sql.dialect import DIALECT


@lru_cache(maxsize=512)
def _parsed(sql: str) -> exp.Expression:
    return sqlglot.parse_one(sql, dialect=DIALECT)


def template(sql: str, **nodes: exp.Expression | str | int) -> exp.Expression:
    """Parse `sql` and replace each `:name` placeholder with `nodes[name]`.

    >>> template("SUM(:x * :w)", x=exp.column("v", "d"), w=exp.column("__ivm_w")).sql()
    'SUM(d.v * __ivm_w)'
    """

    def fill(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Placeholder) and node.name in nodes:
            value = nodes[node.name]
            if isinstance(value, exp.Expression):
                return _grouped(value.copy(), node.parent)
            return exp.convert(value)
        return node

    return _parsed(sql).copy().transform(fill, copy=False)


def _grouped(value: exp.Expression, parent: exp.Expression | None) -> exp.Expression:
    """`value` in parentheses where it is an operand of an operator: sqlglot prints a tree
    as it is, so `:l - :r` with r = `c - l` would print `l - c - l`, which parses as
    `(l - c) - l`."""
    operator = isinstance(parent, (exp.Binary, exp.Unary)) and not isinstance(parent, exp.Paren)
    if operator and isinstance(value, (exp.Binary, exp.Unary)) and not isinstance(value, exp.Paren):
        return exp.Paren(this=value)
    return value


def text(value: str) -> exp.Expression:
    """A string value as SQL that Spark reads back unchanged.

    Spark substitutes `${...}` inside SQL text, string literals included, and escapes differ
    between Spark's parser and other writers; so anything but plain printable ASCII travels
    as the hex of its UTF-8 bytes.

    >>> text("abc").sql(), text("${x}").sql("spark")
    ("'abc'", "CAST(UNHEX('247B787D') AS STRING)")
    """
    if value.isascii() and value.isprintable() and not any(c in value for c in "$\\'"):
        return exp.Literal.string(value)
    unhex = exp.Unhex(this=exp.Literal.string(value.encode().hex().upper()))
    return exp.cast(unhex, exp.DataType.build("string"))


def col(name: str, table: str | None = None) -> exp.Column:
    """A quoted column reference (`table`.`name`)."""
    return exp.column(name, table, quoted=True)


def table(relation: str) -> exp.Table:
    """A quoted table reference for a `db.table` or `catalog.db.table` name (or a bare
    session view name).

    >>> sql(table("lake.sales.orders")), sql(table("db.t")), sql(table("v"))
    ('`lake`.`sales`.`orders`', '`db`.`t`', '`v`')
    """
    parts = relation.split(".")
    if len(parts) == 3:
        return exp.table_(parts[2], parts[1], parts[0], quoted=True)
    db, dot, name = relation.partition(".")
    if not dot:
        return exp.table_(relation, quoted=True)
    return exp.table_(name, db, quoted=True)


def catalog_of(relation: str) -> tuple[str | None, str]:
    """The catalog a relation name names (None: the session's current one) and its
    `db.table` name in that catalog.

    >>> catalog_of("lake.sales.orders"), catalog_of("sales.orders")
    (('lake', 'sales.orders'), (None, 'sales.orders'))
    """
    parts = relation.split(".")
    if len(parts) == 3:
        return parts[0], ".".join(parts[1:])
    return None, relation


def sql(node: exp.Expression) -> str:
    """Render for Spark."""
    return node.sql(dialect=DIALECT)


def conj(parts: list[exp.Expression]) -> exp.Expression | None:
    """AND of the parts (None when there are none)."""
    return exp.and_(*parts) if parts else None


def union_all(parts: list[exp.Expression]) -> exp.Expression:
    """`part UNION ALL part ..` of freshly built parts (taken, not copied: copying the growing
    union at each step made rendering a delta quadratic in its terms).

    >>> union_all([exp.select("1"), exp.select("2"), exp.select("3")]).sql()
    'SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3'
    """
    union = parts[0]
    for part in parts[1:]:
        union = exp.union(union, part, distinct=False, copy=False)
    return union


def null_safe_match(left: list[exp.Expression], right: list[exp.Expression]) -> exp.Expression:
    """`l0 <=> r0 AND l1 <=> r1 ...`; TRUE when there are no keys (an ungrouped aggregate)."""
    if not left:
        return exp.true()
    return exp.and_(
        *(exp.NullSafeEQ(this=a.copy(), expression=b.copy()) for a, b in zip(left, right))
    )


def conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    """The AND-ed parts of a condition (parentheses looked through), `[]` for None."""
    if node is None:
        return []
    if isinstance(node, exp.And):
        return [*conjuncts(node.left), *conjuncts(node.right)]
    if isinstance(node, exp.Paren):
        return conjuncts(node.this)
    return [node]


def aliases(node: exp.Expression) -> set[str]:
    """The table aliases an expression's columns are qualified with."""
    return {c.table for c in node.find_all(exp.Column)}
