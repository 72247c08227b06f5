"""The TPC-H workload: dbgen's data, the 22 queries in Spark SQL, and rounds of changes.

Used by `tests/test_tpch.py` (every query as an `ivm` model, checked against a fresh run of
its SQL after every round of changes) and meant for the benchmark. Nothing here imports
pyspark: every function returns files or SQL text, run by whoever holds a Spark.

* `generate`: TPC-H's own generator (DuckDB's `tpch` extension, loaded from the
  `duckdb-extension-tpch` wheel: `INSTALL tpch` would download it) writes one parquet file a
  table; the files are reused for the same scale factor.
* `queries`: the 22 queries as DuckDB ships them, transpiled by sqlglot to Spark SQL, table
  names qualified with a schema (an AST rewrite, never a text substitution); ORDER BY and
  LIMIT stay.
* `load_statements`: the Iceberg tables created from the parquet files (types kept:
  decimal(15,2), date, int/bigint keys), copy-on-write or merge-on-read.
* `change_statements`: one round of changes. TPC-H's refresh functions RF1 (new orders with
  their line items) and RF2 (orders deleted with their line items), plus the updates TPC-H
  leaves out, to the values the queries filter on: customers move to another nation and get
  a new account balance, parts change size, type, brand and container, suppliers' balances
  change sign (and some get a complaint in their comment), supply costs change, one nation
  moves to another region and one is renamed, orders change status and priority.

Which rows change is a hash of the row's key, the seed and the round (`pmod(hash(key, seed,
round, salt), 10000) < fraction * 10000`): deterministic, no `rand()`, the same rows on every
engine run. New keys are above the current largest, read by the statement itself, so they
never collide with a key of the table, whatever earlier rounds inserted or deleted.
"""

from __future__ import annotations

import os
import random
from collections.abc import Collection, Mapping
from glob import glob
from pathlib import Path
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp

if TYPE_CHECKING:
    import duckdb

#: The 8 TPC-H tables, in load order (dimensions first).
TABLES: tuple[str, ...] = (
    "region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem",
)  # fmt: skip

#: Iceberg properties that make DELETE, UPDATE and MERGE write position delete files instead
#: of rewriting the data files they touch.
MERGE_ON_READ: dict[str, str] = {
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
}

#: Rows are picked per 10,000: `fraction` is rounded to 0.0001.
_PER = 10_000

#: Values the queries filter on (Q2, Q8, Q14, Q16, Q17, Q19), which updated parts take.
PART_SIZES = (15, 14, 3, 1, 10, 49, 23, 5)
PART_TYPES = (
    "ECONOMY ANODIZED STEEL", "PROMO BRUSHED BRASS", "MEDIUM POLISHED BRASS",
    "STANDARD PLATED TIN", "LARGE BURNISHED COPPER", "PROMO ANODIZED NICKEL",
)  # fmt: skip
PART_BRANDS = ("Brand#23", "Brand#12", "Brand#34", "Brand#45", "Brand#11")
PART_CONTAINERS = ("MED BOX", "SM PKG", "LG CASE", "MED BAG", "SM CASE", "JUMBO JAR")
#: Names a renamed nation takes (the ones Q7, Q8, Q11, Q20 and Q21 filter on), and dbgen's
#: keys of the nations so named, which are never renamed (the queries would lose them).
NATION_NAMES = ("GERMANY", "FRANCE", "BRAZIL", "CANADA", "SAUDI ARABIA")
NAMED_NATIONS = (7, 6, 2, 3, 20)
ORDER_STATUSES = ("F", "O", "P")
PRIORITIES = ("1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW")
SHIP_MODES = ("MAIL", "SHIP", "AIR", "AIR REG", "TRUCK", "RAIL", "REG AIR", "FOB")


# ------------------------------------------------------------------------------------------------
# data and queries
# ------------------------------------------------------------------------------------------------


def _connect() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the `tpch` extension loaded from the wheel's file (offline)."""
    import duckdb
    import duckdb_extension_tpch

    folder = os.path.dirname(duckdb_extension_tpch.__file__)
    found = sorted(glob(os.path.join(folder, "extensions", "*", "tpch.duckdb_extension")))
    if not found:
        raise FileNotFoundError(f"no tpch.duckdb_extension under {folder}/extensions")
    con = duckdb.connect()
    con.execute(f"LOAD '{found[-1]}'")
    return con


def generate(sf: float, folder: Path) -> dict[str, Path]:
    """TPC-H's data at scale factor `sf`, one parquet file a table, under `folder/sf<sf>/`.

    The files of an earlier call with the same `sf` are reused. Each file is written under a
    temporary name and renamed, so an interrupted run leaves no partial file behind.

    Args:
        sf: scale factor (SF 0.01: 60,175 line items, 15,000 orders, 1,500 customers).
        folder: where the per-SF folders go.

    Returns:
        Table name -> absolute path of its parquet file, for the 8 tables.
    """
    target = (folder / f"sf{sf:g}").resolve()
    files = {table: target / f"{table}.parquet" for table in TABLES}
    if all(path.is_file() for path in files.values()):
        return files
    target.mkdir(parents=True, exist_ok=True)
    con = _connect()
    try:
        con.execute(f"CALL dbgen(sf={float(sf)!r})")
        for table, path in files.items():
            partial = path.with_suffix(".parquet.partial")
            con.execute(f"COPY {table} TO '{partial}' (FORMAT parquet)")
            partial.replace(path)
    finally:
        con.close()
    return files


def _qualify(tree: exp.Expression, schema: str) -> exp.Expression:
    """Qualify each unqualified TPC-H table with `schema`; names of CTEs stay as they are."""
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        name = table.name.lower()
        if name in TABLES and not table.db and name not in ctes:
            table.set("db", exp.to_identifier(schema))
    return tree


def queries(schema: str, pretty: bool = True) -> dict[int, str]:
    """The 22 TPC-H queries (DuckDB's texts) as Spark SQL over the tables of `schema`.

    Transpiled with sqlglot (read `duckdb`, write `spark`), otherwise as written: ORDER BY
    and LIMIT stay.

    Args:
        schema: the schema (database) holding the 8 tables.
        pretty: one clause a line (sqlglot's pretty printer; whitespace only).

    Returns:
        Query number (1-22) -> its SELECT.
    """
    con = _connect()
    try:
        rows = con.execute(
            "SELECT query_nr, query FROM tpch_queries() ORDER BY query_nr"
        ).fetchall()
    finally:
        con.close()
    return {
        int(nr): _qualify(sqlglot.parse_one(text, read="duckdb"), schema).sql(
            dialect="spark", pretty=pretty
        )
        for nr, text in rows
    }


def load_statements(
    schema: str,
    parquet_files: Mapping[str, Path],
    merge_on_read: bool | Collection[str] = False,
) -> list[str]:
    """SQL that (re)creates the schema's 8 Iceberg tables from `generate`'s parquet files.

    Args:
        schema: the schema to create them in (created if missing; tables of the same names
            are dropped first).
        parquet_files: table name -> parquet file, as `generate` returns.
        merge_on_read: True for every table, or the names of the tables whose DELETE,
            UPDATE and MERGE write position delete files (`MERGE_ON_READ`); the others are
            copy-on-write, Iceberg's default.
    """
    mor = set(TABLES) if merge_on_read is True else set(merge_on_read or ())
    statements = [f"CREATE DATABASE IF NOT EXISTS {schema}"]
    for table in TABLES:
        properties = ""
        if table in mor:
            pairs = ", ".join(f"'{k}'='{v}'" for k, v in MERGE_ON_READ.items())
            properties = f" TBLPROPERTIES ({pairs})"
        path = Path(parquet_files[table]).resolve()
        statements.append(f"DROP TABLE IF EXISTS {schema}.{table}")
        statements.append(
            f"CREATE TABLE {schema}.{table} USING iceberg{properties} "
            f"AS SELECT * FROM parquet.`{path}`"
        )
    return statements


# ------------------------------------------------------------------------------------------------
# changes
# ------------------------------------------------------------------------------------------------


class _Round:
    """SQL fragments of one round: hashes of keys salted with the seed, round and a purpose."""

    def __init__(self, seed: int, round_no: int, fraction: float) -> None:
        self.seed = int(seed)
        self.round_no = int(round_no)
        self.threshold = max(1, round(fraction * _PER))

    def hash(self, keys: str, salt: int) -> str:
        """A non-negative integer below 10,000 drawn from the key columns `keys`."""
        return f"pmod(hash({keys}, {self.seed}, {self.round_no}, {salt}), {_PER})"

    def picked(self, keys: str, salt: int) -> str:
        """True for about `fraction` of the keys."""
        return f"{self.hash(keys, salt)} < {self.threshold}"

    def one_of(self, keys: str, salt: int, values: tuple[object, ...]) -> str:
        """One of `values` (SQL literals of strings or numbers), drawn from the keys."""
        literals = ", ".join(f"'{v}'" if isinstance(v, str) else str(v) for v in values)
        return f"element_at(array({literals}), 1 + pmod({self.hash(keys, salt)}, {len(values)}))"

    def picked_or_one(self, schema: str, table: str, key: str, salt: int) -> str:
        """`picked`, plus one row whatever the fraction (a key in 1..max(key): dbgen's keys of
        supplier, customer and part are dense), so a small table changes every round."""
        draw = f"pmod(hash({self.seed}, {self.round_no}, {salt}), max({key}))"
        return f"({self.picked(key, salt)} OR {key} IN (SELECT 1 + {draw} FROM {schema}.{table}))"


def change_statements(
    schema: str,
    seed: int,
    fraction: float,
    round_no: int,
    tables: Collection[str] = TABLES,
) -> list[str]:
    """One round of changes to the TPC-H tables of `schema`, as Spark SQL statements in order.

    About `fraction` of the rows of each changed table (at least one of supplier, customer
    and part):

    * RF1 (`orders` and `lineitem` in `tables`): new orders with their line items, copies of
      a sample of orders and their lines under new keys above the largest order key
      (lines first, so both read the same largest key), with the dates of an order shifted
      by up to half a year, new quantities (prices follow), discounts and ship modes, and
      another customer, a new priority and sometimes 'special requests' in the comment;
    * RF2 (`orders` and `lineitem`): a sample of orders deleted with their line items (new
      orders of this round may be among them);
    * `orders`: status and priority change;
    * `customer`: nation and account balance change;
    * `part`: size, type, brand and container change (to values the queries filter on);
    * `supplier`: the balance changes sign; every other one gets 'Customer Complaints' in
      its comment (Q16);
    * `partsupp`: the supply cost changes by -50 % to +50 %;
    * `nation`: one nation moves to another region, one (maybe the same; never one of
      `NATION_NAMES`) is renamed to one of `NATION_NAMES`, which the queries filter on.

    `region` never changes. Deterministic for (seed, round_no, fraction): every row is
    picked by a hash of its key, the seed and the round.

    Args:
        schema: the schema of the 8 tables.
        seed: seed of the round (different rounds should get different seeds).
        fraction: share of each changed table's rows, 0.0001 to 1.
        round_no: the round's number (part of every hash).
        tables: the tables to change (default: all but region, which never changes).
    """
    r = _Round(seed, round_no, fraction)
    s = schema
    chosen = set(tables)
    out: list[str] = []
    if {"orders", "lineitem"} <= chosen:
        out += _new_orders(r, s)
        out += [
            f"DELETE FROM {s}.lineitem WHERE {r.picked('l_orderkey', 2)}",
            f"DELETE FROM {s}.orders WHERE {r.picked('o_orderkey', 2)}",
        ]
    if "orders" in chosen:
        out.append(
            f"UPDATE {s}.orders SET "
            f"o_orderstatus = {r.one_of('o_orderkey', 21, ORDER_STATUSES)}, "
            f"o_orderpriority = {r.one_of('o_orderkey', 22, PRIORITIES)} "
            f"WHERE {r.picked('o_orderkey', 20)}"
        )
    if "customer" in chosen:
        # -999.99 .. 9,999.99 (TPC-H's range), exact decimals
        cents = f"{r.hash('c_custkey', 32)} * 110 + pmod(c_custkey, 110) - 99999"
        balance = f"CAST(CAST({cents} AS DECIMAL(15,0)) / 100 AS DECIMAL(15,2))"
        out.append(
            f"UPDATE {s}.customer SET "
            f"c_nationkey = CAST(pmod(c_nationkey + 1 + pmod({r.hash('c_custkey', 31)}, 24), 25)"
            f" AS INT), "
            f"c_acctbal = {balance} "
            f"WHERE {r.picked_or_one(s, 'customer', 'c_custkey', 30)}"
        )
    if "part" in chosen:
        out.append(
            f"UPDATE {s}.part SET "
            f"p_size = {r.one_of('p_partkey', 41, PART_SIZES)}, "
            f"p_type = {r.one_of('p_partkey', 42, PART_TYPES)}, "
            f"p_brand = {r.one_of('p_partkey', 43, PART_BRANDS)}, "
            f"p_container = {r.one_of('p_partkey', 44, PART_CONTAINERS)} "
            f"WHERE {r.picked_or_one(s, 'part', 'p_partkey', 40)}"
        )
    if "supplier" in chosen:
        out.append(
            f"UPDATE {s}.supplier SET s_acctbal = -s_acctbal, "
            f"s_comment = CASE WHEN pmod({r.hash('s_suppkey', 51)}, 2) = 0 "
            f"THEN concat(s_comment, ' Customer Complaints') ELSE s_comment END "
            f"WHERE {r.picked_or_one(s, 'supplier', 's_suppkey', 50)}"
        )
    if "partsupp" in chosen:
        keys = "ps_partkey, ps_suppkey"
        out.append(
            f"UPDATE {s}.partsupp SET ps_supplycost = "
            f"CAST(ps_supplycost * (50 + pmod({r.hash(keys, 61)}, 101)) / 100 AS DECIMAL(15,2)) "
            f"WHERE {r.picked(keys, 60)}"
        )
    if "nation" in chosen:
        draw = random.Random(f"tpch/{seed}/{round_no}")
        moved = draw.randrange(25)
        renamed = draw.choice([k for k in range(25) if k not in NAMED_NATIONS])
        shift, name = draw.randrange(1, 5), draw.choice(NATION_NAMES)
        out.append(
            f"UPDATE {s}.nation SET "
            f"n_regionkey = CASE WHEN n_nationkey = {moved} "
            f"THEN CAST(pmod(n_regionkey + {shift}, 5) AS INT) ELSE n_regionkey END, "
            f"n_name = CASE WHEN n_nationkey = {renamed} THEN '{name}' ELSE n_name END "
            f"WHERE n_nationkey IN ({moved}, {renamed})"
        )
    return out


def _new_orders(r: _Round, s: str) -> list[str]:
    """RF1: copies of a sample of orders (salt 1) with their line items under new keys.

    The new key is the old one plus the largest order key: above every key, distinct for
    distinct old keys. The line items go first: until the orders' INSERT both statements
    read the same largest order key (RF2 deletes lines with their order, so no line item
    has a larger key).
    """
    offset = f"(SELECT max(o_orderkey) FROM {s}.orders)"

    def days(key: str) -> str:
        """An order's shift of dates: the same from l_orderkey and o_orderkey (both bigint)."""
        return f"CAST(pmod({r.hash(key, 3)}, 365) - 182 AS INT)"

    quantity = f"CAST(1 + pmod({r.hash('l_orderkey, l_linenumber', 11)}, 50) AS DECIMAL(15,2))"
    discount = f"CAST(pmod({r.hash('l_orderkey, l_linenumber', 12)}, 11) AS DECIMAL(15,2)) / 100"
    line_days = days("l_orderkey")
    lines = (
        f"INSERT INTO {s}.lineitem SELECT "
        f"l_orderkey + {offset}, l_partkey, l_suppkey, l_linenumber, "
        f"{quantity}, "
        f"CAST(l_extendedprice / l_quantity * {quantity} AS DECIMAL(15,2)), "
        f"CAST({discount} AS DECIMAL(15,2)), "
        f"l_tax, l_returnflag, l_linestatus, "
        f"date_add(l_shipdate, {line_days}), date_add(l_commitdate, {line_days}), "
        f"date_add(l_receiptdate, {line_days}), l_shipinstruct, "
        f"{r.one_of('l_orderkey, l_linenumber', 13, SHIP_MODES)}, l_comment "
        f"FROM {s}.lineitem WHERE {r.picked('l_orderkey', 1)}"
    )
    customer = (
        f"CASE WHEN pmod({r.hash('o_orderkey', 14)}, 2) = 0 THEN o_custkey ELSE "
        f"1 + pmod({r.hash('o_orderkey', 15)}, (SELECT max(c_custkey) FROM {s}.customer)) END"
    )
    orders = (
        f"INSERT INTO {s}.orders SELECT "
        f"o_orderkey + {offset}, {customer}, o_orderstatus, o_totalprice, "
        f"date_add(o_orderdate, {days('o_orderkey')}), "
        f"{r.one_of('o_orderkey', 16, PRIORITIES)}, o_clerk, o_shippriority, "
        f"CASE WHEN pmod({r.hash('o_orderkey', 17)}, 4) = 0 "
        f"THEN concat(o_comment, ' special requests') ELSE o_comment END "
        f"FROM {s}.orders WHERE {r.picked('o_orderkey', 1)}"
    )
    return [lines, orders]
