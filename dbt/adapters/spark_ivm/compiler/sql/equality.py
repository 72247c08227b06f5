"""equality: the SQL of the `ivm_consistent` test: does a relation equal a fresh run of its SQL?

Both sides are compared as bags. Without floating point columns that is EXCEPT ALL both ways.
With them, rows are paired within equal non-float columns (null-safe) in order of their float
values, and a pair matches when each float is within a relative 1e-9 of the other: an
incrementally maintained sum adds and subtracts in another order than a fresh SUM does.

Example result row: `__ivm_side = 'missing'` (in the SQL's result, not in the relation),
`'extra'` (in the relation only) or `'different'` (paired, floats too far apart).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.sql.templates import col, sql, table, template

RELATIVE_TOLERANCE = "1e-9"


def _is_float(dtype: str) -> bool:
    parsed = exp.DataType.build(dtype, dialect="spark")
    return parsed.this in (exp.DataType.Type.DOUBLE, exp.DataType.Type.FLOAT)


def consistency_sql(relation: str, model_sql: str, columns: Sequence[tuple[str, str]]) -> str:
    """Rows that differ between `relation` and `model_sql` (no rows: they are equal)."""
    names = [n for n, _ in columns]
    floats = [n for n, t in columns if _is_float(t)]
    exact = [n for n in names if n not in floats]
    actual = f"SELECT * FROM {sql(table(relation))}"
    expected = f"SELECT * FROM ({model_sql}) AS __ivm_expected"
    if not floats:
        return (
            f"SELECT 'missing' AS __ivm_side, * FROM ({expected} EXCEPT ALL {actual}) "
            f"UNION ALL SELECT 'extra' AS __ivm_side, * FROM ({actual} EXCEPT ALL {expected})"
        )
    partition = ", ".join(sql(col(n)) for n in exact) or "1"
    order = ", ".join(sql(col(n)) for n in floats)
    numbered = "SELECT *, ROW_NUMBER() OVER (PARTITION BY {p} ORDER BY {o}) AS __ivm_rn FROM ({q})"
    pair = exp.and_(
        *(exp.NullSafeEQ(this=col(n, "e"), expression=col(n, "a")) for n in exact),
        template(":x = :y", x=col("__ivm_rn", "e"), y=col("__ivm_rn", "a")),
    )
    close = [
        template(
            "(:e IS NULL AND :a IS NULL) OR (isnan(:e) AND isnan(:a)) OR :e = :a "
            f"OR abs(:e - :a) <= {RELATIVE_TOLERANCE} * greatest(abs(:e), abs(:a))",
            e=col(n, "e"),
            a=col(n, "a"),
        )
        for n in floats
    ]
    picks = ", ".join(
        f"COALESCE({sql(col(n, 'e'))}, {sql(col(n, 'a'))}) AS {sql(col(n))}" for n in exact
    )
    float_picks = ", ".join(
        f"{sql(col(n, 'e'))} AS {sql(col('expected_' + n))}, "
        f"{sql(col(n, 'a'))} AS {sql(col('actual_' + n))}"
        for n in floats
    )
    return (
        "SELECT CASE WHEN a.__ivm_rn IS NULL THEN 'missing' WHEN e.__ivm_rn IS NULL THEN 'extra' "
        f"ELSE 'different' END AS __ivm_side, {picks + ', ' if picks else ''}{float_picks} "
        f"FROM ({numbered.format(p=partition, o=order, q=expected)}) AS e "
        f"FULL OUTER JOIN ({numbered.format(p=partition, o=order, q=actual)}) AS a "
        f"ON {sql(pair)} "
        f"WHERE a.__ivm_rn IS NULL OR e.__ivm_rn IS NULL OR NOT ({sql(exp.and_(*close))})"
    )
