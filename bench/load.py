"""Writing the base tables of `datagen.py` at a scale factor: the benchmark's initial load."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.datagen import (
    CUSTOMERS_TABLE,
    LINEITEM_TABLE,
    MEAN_LINES_PER_ORDER,
    NATIONS,
    NATIONS_TABLE,
    SOURCE_SCHEMA,
    TABLES,
    BaseTable,
    WriteMode,
    customer_count,
    order_count,
    scale_of,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class LoadedTable:
    """What a load wrote: rows, files, seconds."""

    name: str
    rows: int
    files: int
    seconds: float


def file_count(spark: SparkSession, table: BaseTable) -> int:
    """Data files in the table's current snapshot (`files` would count delete files too)."""
    return int(spark.sql(f"SELECT count(*) FROM {table.qualified}.data_files").collect()[0][0])


def key_count(table: BaseTable, sf: float) -> int:
    """Range-key values of the initial load (lineitem: orders, 4 lines each on average)."""
    if table is NATIONS_TABLE:
        return len(NATIONS)
    if table is CUSTOMERS_TABLE:
        return customer_count(sf)
    return order_count(sf)


def load(
    spark: SparkSession,
    sf: float,
    seed: str,
    rows_per_file: int,
    progress: Callable[[BaseTable, int], Callable[[int], None]],
    write_mode: WriteMode = "copy-on-write",
) -> list[LoadedTable]:
    """Drop and create every base table (DELETE/UPDATE/MERGE in `write_mode`) and fill it at
    scale factor `sf`.

    A table is written in chunks of up to 8 files (one INSERT each), so `progress(table,
    expected_rows)` gets a callback that is called with the rows written after every chunk.
    """
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {SOURCE_SCHEMA}")
    scale = scale_of(sf)
    loaded: list[LoadedTable] = []
    for table in TABLES:
        start = time.perf_counter()
        spark.sql(f"DROP TABLE IF EXISTS {table.qualified} PURGE")
        spark.sql(table.ddl(write_mode))
        keys = key_count(table, sf)
        per_key = MEAN_LINES_PER_ORDER if table is LINEITEM_TABLE else 1
        expected = keys * per_key
        files = max(1, math.ceil(expected / rows_per_file))
        chunks = math.ceil(files / 8)
        advance = progress(table, expected)
        first = 1 if table is not NATIONS_TABLE else 0
        bounds = [first + keys * i // chunks for i in range(chunks + 1)]
        for low, high in itertools.pairwise(bounds):
            chunk_files = max(1, round(files * (high - low) / keys))
            select = table.rows(seed, low, high, scale, chunk_files)
            spark.sql(f"INSERT INTO {table.qualified} {select}")
            advance((high - low) * per_key)
        rows = int(spark.sql(f"SELECT count(*) FROM {table.qualified}").collect()[0][0])
        loaded.append(
            LoadedTable(table.name, rows, file_count(spark, table), time.perf_counter() - start)
        )
    return loaded
