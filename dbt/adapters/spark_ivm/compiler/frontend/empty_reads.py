"""empty_reads: the model's own query behind what dbt's `--empty` renders.

`dbt run --empty` renders each `ref()` and `source()` as a sub-query that reads no rows,
`(select * from <relation> where false limit 0)`, so that a model's SQL runs against its
inputs' shapes without their data. To the compiler a sub-query with a LIMIT is a construct
it refuses; to tell whether the model itself is one the ivm materialization maintains, an
`--empty` run checks the query with each such sub-query put back to the relation it reads
(its alias kept):

    (SELECT * FROM t WHERE FALSE LIMIT 0) AS o   ->   t AS o

    >>> restored("select o.k from (select * from `db`.`t` where false limit 0) as o")
    'SELECT o.k FROM `db`.`t` AS o'
    >>> restored("select k from (select * from db.t where false limit 1) as o")  # not --empty's
    'SELECT k FROM (SELECT * FROM db.t WHERE FALSE LIMIT 1) AS o'
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.sql.dialect import DIALECT


def _read_relation(node: exp.Expression) -> exp.Table | None:
    """The relation an `--empty` sub-query reads (None: `node` is no such sub-query)."""
    if not isinstance(node, exp.Subquery) or not isinstance(node.this, exp.Select):
        return None
    select = node.this
    limit, where, source = (
        select.args.get("limit"),
        select.args.get("where"),
        select.args.get("from_"),
    )
    shaped = (
        len(select.expressions) == 1
        and isinstance(select.expressions[0], exp.Star)
        and isinstance(limit, exp.Limit)
        and isinstance(limit.expression, exp.Literal)
        and limit.expression.name == "0"
        and where is not None
        and isinstance(where.this, exp.Boolean)
        and not where.this.this
        and source is not None
        and isinstance(source.this, exp.Table)
        and not source.this.alias
        and not select.args.get("joins")
    )
    return source.this if shaped else None


def restored(compiled_sql: str) -> str:
    """`compiled_sql` with each sub-query `--empty` rendered read as its relation."""

    def put_back(node: exp.Expression) -> exp.Expression:
        relation = _read_relation(node)
        if relation is None:
            return node
        table = relation.copy()
        if node.args.get("alias") is not None:
            table.set("alias", node.args["alias"].copy())
        return table

    tree = sqlglot.parse_one(compiled_sql, read=DIALECT)
    return tree.transform(put_back).sql(DIALECT)
