"""merge: the one MERGE INTO a state's refresh commits with.

A refresh commits once: the changes of the state's data rows and the metadata row's new
watermarks ride one MERGE, one Iceberg commit, so readers see the old state or the new one.
Each operator family says which source rows it merges (`using`, the metadata row among them),
how they meet the state's rows (`match`) and what each WHEN does, in order; the statement is
written here. The state is `s`, the source `d`.

>>> from dbt.adapters.spark_ivm.compiler.sql.templates import template
>>> print(merge_into(
...     "db.m__ivm_state",
...     template("SELECT * FROM d0"),
...     template("s.k = d.k"),
...     [When.matched("UPDATE SET __ivm_meta__ = d.__ivm_meta__", "d.__ivm_row__ = 1"),
...      When.matched("DELETE"),
...      When.not_matched("INSERT (k) VALUES (d.k)", "d.__ivm_row__ = 0")],
... ).replace(" WHEN", "\\nWHEN"))
MERGE INTO `db`.`m__ivm_state` AS s USING (SELECT * FROM d0) AS d ON s.k = d.k
WHEN MATCHED AND d.__ivm_row__ = 1 THEN UPDATE SET __ivm_meta__ = d.__ivm_meta__
WHEN MATCHED THEN DELETE
WHEN NOT MATCHED AND d.__ivm_row__ = 0 THEN INSERT (k) VALUES (d.k)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.sql.templates import sql, table

__all__ = ["When", "merge_into"]


@dataclass(frozen=True)
class When:
    """One WHEN clause: for source rows that matched a state row or not, under `condition`
    (None: all the earlier clauses left), the `action` (DELETE, UPDATE SET .., INSERT ..)."""

    is_matched: bool
    action: str
    condition: str | None = None

    @classmethod
    def matched(cls, action: str, condition: str | None = None) -> When:
        return cls(True, action, condition)

    @classmethod
    def not_matched(cls, action: str, condition: str | None = None) -> When:
        return cls(False, action, condition)

    def sql(self) -> str:
        head = "WHEN MATCHED" if self.is_matched else "WHEN NOT MATCHED"
        guard = f" AND {self.condition}" if self.condition else ""
        return f"{head}{guard} THEN {self.action}"


def merge_into(
    state: str,
    using: exp.Expression,
    match: exp.Expression,
    whens: Sequence[When],
    guard: exp.Expression | None = None,
) -> str:
    """MERGE INTO `state` AS s USING (`using`) AS d ON `match`, then each WHEN in order; with
    a `guard`, the source rows only while it holds (else the MERGE changes nothing).

    >>> from dbt.adapters.spark_ivm.compiler.sql.templates import template
    >>> print(merge_into("db.t", template("SELECT 1 AS k"), template("s.k = d.k"),
    ...     [When.matched("DELETE")], guard=template("EXISTS(SELECT 1 FROM db.g)")))
    MERGE INTO `db`.`t` AS s USING (SELECT * FROM (SELECT 1 AS k) AS g WHERE EXISTS(SELECT 1 FROM db.g)) AS d ON s.k = d.k WHEN MATCHED THEN DELETE
    """
    if guard is not None:
        alias = exp.TableAlias(this=exp.to_identifier("g"))
        using = exp.select("*").from_(exp.Subquery(this=using, alias=alias)).where(guard)
    head = f"MERGE INTO {sql(table(state))} AS s USING ({sql(using)}) AS d ON {sql(match)}"
    return " ".join([head, *(w.sql() for w in whens)])
