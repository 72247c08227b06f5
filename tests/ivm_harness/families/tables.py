"""The base tables of the differential families: shared by every family that lists them.

Their data is generated from the column declarations (`key=True` columns have a small
domain, so groups collide and join keys match).
"""

from __future__ import annotations

from dataclasses import replace

from ..spec import Col, Table

#: All seven types; two string/int group keys; NULLs everywhere.
T1 = Table(
    "t1",
    (
        Col("k1", "string", key=True),
        Col("k2", "int", key=True),
        Col("i", "int"),
        Col("b", "bigint"),
        Col("d", "decimal(10,2)"),
        Col("x", "double"),
        Col("dt", "date"),
        Col("flag", "boolean"),
    ),
)

#: Keys of other types (a NOT NULL bigint, a date, a boolean).
T2 = Table(
    "t2",
    (
        Col("g", "bigint", key=True, nullable=False),
        Col("day", "date", key=True),
        Col("active", "boolean", key=True),
        Col("s", "string"),
        Col("qty", "int"),
        Col("amount", "decimal(10,2)"),
        Col("score", "double"),
    ),
)

#: A base table written merge-on-read (its deletes/updates leave delete files, which Iceberg's
#: changelog procedure refuses: docs/architecture.md, §3).
T3_MOR = Table(
    "t3_mor",
    (
        Col("k", "string", key=True),
        Col("v", "int"),
        Col("w", "double"),
    ),
    properties=(
        ("format-version", "2"),
        ("write.delete.mode", "merge-on-read"),
        ("write.update.mode", "merge-on-read"),
        ("write.merge.mode", "merge-on-read"),
    ),
)

#: Join inputs shaped like a small star: orders -> customers -> nations (keys collide, NULLs).
ORDERS = Table(
    "orders",
    (
        Col("oid", "int", key=True),
        Col("cust", "int", key=True),
        Col("status", "string", key=True),
        Col("amount", "decimal(10,2)"),
        Col("weight", "double"),
        Col("qty", "int"),
    ),
)
CUSTOMERS = Table(
    "customers",
    (
        Col("cid", "int", key=True),
        Col("nation", "int", key=True),
        Col("segment", "string", key=True),
        Col("credit", "int"),
    ),
)
NATIONS = Table(
    "nations",
    (
        Col("nid", "int", key=True),
        Col("nname", "string", key=True),
        Col("region", "string", key=True),
    ),
)

#: The star's first two tables written merge-on-read, so a join's capture meets delete files
#: on both sides (the version diff restricted to the touched files: capture/touched_files.py).
MOR_PROPERTIES = T3_MOR.properties
ORDERS_MOR = replace(ORDERS, name="orders_mor", properties=MOR_PROPERTIES)
CUSTOMERS_MOR = replace(CUSTOMERS, name="customers_mor", properties=MOR_PROPERTIES)

#: Format version 3 (Iceberg 1.10): merge-on-read deletes are deletion vectors (Puffin files,
#: one a data file) instead of position delete files, and every table carries row lineage
#: (the metadata columns `_row_id`, `_last_updated_sequence_number`, never part of `*`).
V3_DV_PROPERTIES = tuple((k, "3" if k == "format-version" else v) for k, v in MOR_PROPERTIES)
ORDERS_V3_DV = replace(ORDERS, name="orders_v3_dv", properties=V3_DV_PROPERTIES)
CUSTOMERS_V3 = replace(CUSTOMERS, name="customers_v3", properties=(("format-version", "3"),))

#: Strings that equal a number when cast to it ('01', '1.0', ' 1') but not as text: IN compares
#: a string with a number as text, a join equality as numbers.
CODES = Table(
    "codes",
    (
        Col("code", "string", key=True, domain=("1", "01", "1.0", " 1", "2", "-1", "x", "")),
        Col("n", "int", key=True),
    ),
)
