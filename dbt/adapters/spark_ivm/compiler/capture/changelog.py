"""changelog: the change of a copy-on-write Iceberg table from its changelog scan.

Iceberg's changelog scan between two snapshots of a table yields every row of the data files
each snapshot added (`INSERT`) and deleted (`DELETE`). A copy-on-write UPDATE or DELETE
rewrites whole files, so most of those rows are carry-overs: unchanged rows deleted with the
old file and inserted with the new one. `weights.weighted_log` cancels them by summing
weights, so the scan is read raw where the connection can (`Executor.changelog_view`, the
session method: a DataFrame read of the `changes` table with the snapshot range as options);
otherwise through the `create_changelog_view` procedure, which removes carry-overs itself
with an extra shuffle and sort of all the table's columns (the only way to pass the range in
Spark 3.5 SQL).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.capture import PROCEDURES
from dbt.adapters.spark_ivm.compiler.capture.weights import weighted_log
from dbt.adapters.spark_ivm.compiler.sql.templates import catalog_of, col, sql


def scan_options(old: int | None, new: int) -> dict[str, str]:
    """The changelog scan's read options for the snapshots after `old` up to `new`."""
    options = {"end-snapshot-id": str(int(new))}
    if old is not None:
        options["start-snapshot-id"] = str(int(old))
    return options


def procedure_sql(relation: str, old: int | None, new: int, view_name: str) -> str:
    """The CALL that creates the changelog temp view (carry-overs removed) over SQL alone;
    the procedure of the relation's catalog where it names one.

    >>> procedure_sql("lake.s.t", 1, 2, "v").split(", options")[0]
    "CALL `lake`.system.create_changelog_view(table => 's.t'"
    """
    options = ", ".join(f"'{k}', '{v}'" for k, v in scan_options(old, new).items())
    catalog, name = catalog_of(relation)
    procedures = PROCEDURES
    if catalog:
        procedures = f"{sql(exp.to_identifier(catalog, quoted=True))}.{PROCEDURES}"
    return (
        f"CALL {procedures}.create_changelog_view(table => '{name}', "
        f"options => map({options}), changelog_view => '{view_name}')"
    )


def log_select(view_name: str, columns: Sequence[str], exact: Collection[str] = ()) -> exp.Select:
    """The compacted log of a changelog view (raw or carry-overs removed: same result):
    a carried-over row, deleted with its old file and inserted with the new one, sums to
    weight 0 and is dropped.

    >>> text = log_select("v", ["k", "x"]).sql("spark")
    >>> for part in (" FROM", " GROUP"):
    ...     text = text.replace(part, "\\n" + part.lstrip())
    >>> print(text)
    SELECT `k`, `x`, SUM(`__ivm_cw`) AS `__ivm_w`
    FROM (SELECT `k`, `x`, IF(_change_type IN ('INSERT', 'UPDATE_AFTER'), 1, -1) AS `__ivm_cw`
    FROM `v`) AS __ivm_src
    GROUP BY `k`, `x` HAVING SUM(`__ivm_cw`) <> 0
    """
    weight = exp.If(
        this=exp.column("_change_type").isin("INSERT", "UPDATE_AFTER"),
        true=exp.Literal.number(1),
        false=exp.Literal.number(-1),
    )
    source = (
        exp.Select()
        .select(*(col(c) for c in columns))
        .select(exp.alias_(weight, "__ivm_cw", quoted=True))
        .from_(exp.to_identifier(view_name, quoted=True))
    )
    return weighted_log(source, columns, col("__ivm_cw"), exact)
