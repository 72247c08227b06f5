"""layout: how the tables an ivm model writes are created, with dbt-spark's table configs.

Every table the plugin creates for a model (its state, its sub-query and auxiliary states, its
delta log, the copies it diffs non-Iceberg bases against, and the table an unmaintainable
model is rebuilt as) is an Iceberg table with the properties the plugin relies on. A model's
configs add to them what dbt-spark's `table` materialization takes:

* `tblproperties`: more table properties (a key the plugin sets too takes the model's value:
  its write modes and metadata retention are tuning, not correctness);
* `location_root`: the tables are created at `<location_root>/<table>` (with
  `include_full_name_in_path: true`, `<location_root>/<schema>/<table>`), as dbt-spark
  places a table;
* `partition_by`: the model's own state (or the table of a rebuilt model) is partitioned by
  the state columns holding those result columns; Iceberg transforms (`bucket(16, k)`,
  `days(ts)`) take the column as their last argument. The other tables are not partitioned:
  they have other columns.

    >>> layout = Layout.of({"tblproperties": {"write.target-file-size-bytes": 8388608},
    ...                     "location_root": "/lake/ivm/", "partition_by": "region"}, "m")
    >>> layout.create_sql("db.m__ivm_state", {"format-version": "2"}, ["__ivm_k0"])
    "CREATE TABLE `db`.`m__ivm_state` USING iceberg PARTITIONED BY (`__ivm_k0`) \
LOCATION '/lake/ivm/m__ivm_state' TBLPROPERTIES ('format-version' = '2', \
'write.target-file-size-bytes' = '8388608')"
    >>> Layout().create_sql("db.t", {"format-version": "2"})
    "CREATE TABLE `db`.`t` USING iceberg TBLPROPERTIES ('format-version' = '2')"
    >>> Layout.of({"partition_by": ["bucket(4, k)", "day"]}, "m").partition_columns
    ('k', 'day')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.errors import IvmError
from dbt.adapters.spark_ivm.compiler.sql.templates import sql, table

#: Previous metadata files a table the plugin writes keeps (Iceberg deletes older ones).
METADATA_VERSIONS = 8
#: Table properties that bound those metadata files (`runtime/upkeep.py`); every table the
#: plugin creates carries them.
BOUNDED_METADATA = {
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": str(METADATA_VERSIONS),
}


def properties_sql(properties: Mapping[str, str]) -> str:
    """`'k' = 'v', ...` for a TBLPROPERTIES clause.

    >>> properties_sql({"format-version": "2", "it's": "a"})
    "'format-version' = '2', 'it\\\\'s' = 'a'"
    """
    return ", ".join(
        f"{sql(exp.Literal.string(k))} = {sql(exp.Literal.string(v))}"
        for k, v in properties.items()
    )


def _partition(entry: Any, model: str) -> exp.Expression:
    """One `partition_by` entry: a column, or an Iceberg transform of exactly one column."""
    try:
        node = sqlglot.parse_one(str(entry), read="spark")
    except sqlglot.errors.ParseError:
        node = None
    if node is None or len(list(node.find_all(exp.Column))) != 1:
        raise IvmError(
            f"ivm model '{model}': partition_by entry {entry!r} is neither a result column "
            "nor an Iceberg transform of one (bucket(n, col), truncate(n, col), years(col), "
            "months(col), days(col), hours(col))"
        )
    return node


@dataclass(frozen=True)
class Layout:
    """A model's `tblproperties`, `partition_by` and `location_root` (see the module)."""

    properties: Mapping[str, str] = field(default_factory=dict)
    partitions: tuple[exp.Expression, ...] = ()
    location_root: str | None = None
    full_name_in_path: bool = False

    @classmethod
    def of(cls, config: Mapping[str, Any] | None, model: str) -> Layout:
        """The model's configs (None or missing keys: dbt's defaults); a value of the wrong
        kind is an error naming the config."""
        config = config or {}
        given = config.get("tblproperties") or {}
        if not isinstance(given, Mapping):
            raise IvmError(
                f"ivm model '{model}': tblproperties must be a mapping of property names to "
                f"values, not {given!r}"
            )
        partition_by = config.get("partition_by") or []
        if isinstance(partition_by, str):
            partition_by = [partition_by]
        root = config.get("location_root")
        return cls(
            properties={str(k): str(v) for k, v in given.items()},
            partitions=tuple(_partition(p, model) for p in partition_by),
            location_root=str(root).rstrip("/") if root else None,
            full_name_in_path=bool(config.get("include_full_name_in_path")),
        )

    @property
    def partition_columns(self) -> tuple[str, ...]:
        """The result column each `partition_by` entry reads."""
        return tuple(next(p.find_all(exp.Column)).name for p in self.partitions)

    def partition_sql(self, state_columns: Sequence[str]) -> str:
        """`partition_by` with each result column read as its state column."""
        parts = []
        for node, column in zip(self.partitions, state_columns):
            moved = node.copy()
            state_column = exp.column(column, quoted=True)
            if isinstance(moved, exp.Column):
                moved = state_column
            else:
                next(moved.find_all(exp.Column)).replace(state_column)
            parts.append(sql(moved))
        return ", ".join(parts)

    def location(self, relation: str) -> str | None:
        """Where `relation` (`schema.table`) is created (None: the catalog's default)."""
        if self.location_root is None:
            return None
        schema, _, name = relation.rpartition(".")
        path = f"{schema}/{name}" if self.full_name_in_path and schema else name
        return f"{self.location_root}/{path}"

    def create_sql(
        self,
        relation: str,
        own: Mapping[str, str],
        state_columns: Sequence[str] = (),
        replace: bool = False,
    ) -> str:
        """`CREATE [OR REPLACE] TABLE relation USING iceberg ...` with the plugin's properties
        `own`, the model's, and (for the model's own state) its partitions as `state_columns`."""
        verb = "CREATE OR REPLACE TABLE" if replace else "CREATE TABLE"
        head = f"{verb} {sql(table(relation))} USING iceberg"
        if state_columns:
            head += f" PARTITIONED BY ({self.partition_sql(state_columns)})"
        where = self.location(relation)
        if where is not None:
            head += f" LOCATION {sql(exp.Literal.string(where))}"
        return f"{head} TBLPROPERTIES ({properties_sql({**own, **self.properties})})"

    def unpartitioned(self) -> Layout:
        """The layout of a model's other tables (sub-query and auxiliary states): their
        columns are not the model's result."""
        return Layout(self.properties, (), self.location_root, self.full_name_in_path)


#: A model without table configs.
NO_LAYOUT = Layout()
