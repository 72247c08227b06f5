"""snapshot diff: the change of a base relation that keeps no snapshots (issue 12, item 4).

A parquet or Hive table, a CSV seed without `file_format: iceberg`, a dbt `table` model
written as parquet and replaced wholesale every run: no change log to read. The model keeps
the last consumed copy of such a relation as an Iceberg table of its own,
`<model>__ivm_copy__<db>__<table>`, and reads the copy instead of the relation. Before each run the copy
is brought level with the relation: one weighted pass over both finds whether any row differs

    SELECT count(*) FROM (SELECT <cols>, SUM(w) FROM (SELECT *, 1 w FROM r
                           UNION ALL SELECT *, -1 w FROM copy) GROUP BY <cols>
                          HAVING SUM(w) <> 0)

and only then is the copy overwritten with the relation (one Iceberg snapshot). To the
refresh the copy is one more Iceberg base table: its snapshot since the model's watermark is
captured like any other (the overwrite's old and new rows cancel where they are equal), so a
failure between the copy's commit and the model's is read again by the next run.

    r = {a, a, b}, copy = {a, b, c}  ->  differing rows: (a, +1), (c, -1)  ->  overwrite copy

Doubles are compared by their text (`-0.0` and `0.0` group together in Spark, and a copy
that kept the wrong one would show it), maps by their JSON (maps cannot be grouped).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence

import sqlglot
from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.frontend.analyze import relation_key
from dbt.adapters.spark_ivm.compiler.sql.layout import BOUNDED_METADATA, NO_LAYOUT, Layout
from dbt.adapters.spark_ivm.compiler.sql.templates import col, sql, table

DIALECT = "spark"
#: View property of the model: {relation: copy table} of the relations read through copies.
COPIES = "ivm.copies"


#: Table property of a copy: a digest of the relation's columns when the copy was made.
SOURCE_SCHEMA = "ivm.source_schema"


def copy_name(view: str, relation: str) -> str:
    """The copy table the model `view` keeps of `relation` (`db.table`).

    >>> copy_name("db.m", "raw.plain")
    'db.m__ivm_copy__raw__plain'
    """
    return f"{view}__ivm_copy__{relation.replace('.', '__')}"


def read_copies(model_sql: str, copies: Mapping[str, str], default_db: str) -> str:
    """The model's SQL reading each copied relation's copy, under the relation's alias.

    >>> read_copies("select k from raw.p join db.t on p.k = t.k", {"raw.p": "db.m__c"}, "db")
    'SELECT k FROM `db`.`m__c` AS p JOIN db.t ON p.k = t.k'
    """
    if not copies:
        return model_sql
    tree = sqlglot.parse_one(model_sql, dialect=DIALECT)
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    for ref in list(tree.find_all(exp.Table)):
        if not ref.name or (not ref.db and ref.name.lower() in ctes):
            continue
        copy = copies.get(relation_key(ref, default_db))
        if copy is None:
            continue
        replacement = table(copy)
        replacement.set("alias", exp.TableAlias(this=exp.to_identifier(ref.alias_or_name)))
        ref.replace(replacement)
    return sql(tree)


def _comparable(name: str, dtype: str) -> exp.Expression:
    """A column as it is grouped when the two bags are compared (see the module docstring)."""
    value = col(name)
    kind = dtype.lower()
    if "map<" in kind:
        return exp.func("to_json", value)
    if kind in ("double", "float"):
        return exp.cast(value, exp.DataType.build("string"))
    return value


def differing_rows_sql(relation: str, copy: str, columns: Sequence[tuple[str, str]]) -> str:
    """How many distinct rows occur a different number of times in `relation` and `copy`."""
    keys = [exp.alias_(_comparable(n, t), f"__ivm_c{i}") for i, (n, t) in enumerate(columns)]
    weight = exp.column("__ivm_w")

    def side(source: str, w: int) -> exp.Select:
        return (
            exp.Select()
            .select(*keys, exp.alias_(exp.Literal.number(w), "__ivm_w"))
            .from_(table(source))
        )

    both = exp.union(side(relation, 1), side(copy, -1), distinct=False)
    groups = [exp.column(f"__ivm_c{i}") for i in range(len(columns))]
    differing = (
        exp.Select()
        .select(exp.Literal.number(1))
        .from_(exp.Subquery(this=both, alias=exp.TableAlias(this=exp.to_identifier("__ivm_b"))))
        .group_by(*groups)
        .having(exp.NEQ(this=exp.func("SUM", weight), expression=exp.Literal.number(0)))
    )
    count = (
        exp.Select()
        .select(exp.func("COUNT", exp.Star()))
        .from_(
            exp.Subquery(this=differing, alias=exp.TableAlias(this=exp.to_identifier("__ivm_d")))
        )
    )
    return sql(count)


def schema_digest(columns: Sequence[tuple[str, str]]) -> str:
    return hashlib.sha256(json.dumps([list(c) for c in columns]).encode()).hexdigest()[:16]


def create_copy_sql(
    relation: str, copy: str, columns: Sequence[tuple[str, str]], layout: Layout = NO_LAYOUT
) -> list[str]:
    """(Re)create the copy from the relation: an Iceberg table with the relation's rows and
    a digest of the relation's columns in its properties (created as the model's `layout`
    says)."""
    props = {"format-version": "2", SOURCE_SCHEMA: schema_digest(columns), **BOUNDED_METADATA}
    return [
        f"DROP TABLE IF EXISTS {sql(table(copy))} PURGE",
        f"{layout.create_sql(copy, props)} AS SELECT * FROM {sql(table(relation))}",
    ]


def overwrite_copy_sql(relation: str, copy: str) -> str:
    return f"INSERT OVERWRITE {sql(table(copy))} SELECT * FROM {sql(table(relation))}"
