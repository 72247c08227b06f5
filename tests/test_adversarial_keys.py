"""Join keys that a refresh must carry exactly (issue 10, class 1).

Key pruning writes the join keys a change touches into the delta SQL. Hostile values must
round-trip exactly: quotes, backslashes, `${...}` (Spark substitutes variables in SQL
text), NUL and other control characters, unicode, empty and very long strings; dates
before year 1000 and after year 9999; decimals at their precision limit; the extremes of
bigint; NaN, infinities and -0.0 as double keys (not pruned, but joined, grouped and
merged on). Each table pair is refreshed with few changed keys (listed as IN literals) and
with more than `MAX_LISTED_KEYS` (ranges), through an inner join, a left join and a group
by of the key, and every relation must equal a fresh run of its SQL after the build and after
every refresh.

Every other hostile value is in the tables from the start (the build reads it), so the first
refresh (few keys, listed) both adds new hostile groups and updates, deletes and duplicates
existing ones; the second (more than `MAX_LISTED_KEYS` keys, ranges) changes every hostile key
again, most of them present by then.
"""

from __future__ import annotations

import random

import pytest
from support.adversarial import assert_equal_to_sql, run_messages
from support.small_project import SmallProject

from dbt.adapters.spark_ivm.compiler.optimize.pruning import MAX_LISTED_KEYS

SCHEMA = "ivm_adv_keys"

HOSTILE_STRINGS = [
    "${x}",
    "${spark.app.name}",
    "${env:HOME}",
    "${hiveconf:x}",
    "z\x0012",
    "\x00",
    "it's",
    "''",
    '"',
    "back\\slash",
    "\\",
    "\\'",
    "",
    " ",
    "a\nb",
    "\t",
    "\r\n",
    "\x07\x1b",
    "ü€😀",
    "\u202e",
    "日本",
    "%",
    "_",
    "--",
    "/*",
    "NULL",
    "null",
    "x" * 5000,
]


def _string_lit(value: str) -> str:
    # Test data goes in as hex too: the test must not depend on the escaping under test.
    return f"CAST(UNHEX('{value.encode().hex()}') AS STRING)"


# name -> (SQL type, literals of hostile values, a generator of ordinary values)
KEY_TYPES: dict[str, tuple[str, list[str], object]] = {
    "str": ("string", [_string_lit(s) for s in HOSTILE_STRINGS], lambda i: _string_lit(f"k{i}")),
    "dt": (
        "date",
        [
            "DATE_FROM_UNIX_DATE(2932897)",
            "DATE_FROM_UNIX_DATE(3000000)",  # years 10000, 10183
            "DATE '0001-01-01'",
            "DATE '0999-12-31'",
            "DATE_FROM_UNIX_DATE(-719163)",  # year 0
            "DATE '9999-12-31'",
            "DATE '1970-01-01'",
        ],
        lambda i: f"DATE_FROM_UNIX_DATE({i * 37})",
    ),
    "dec": (
        "decimal(38,10)",
        [
            "CAST('9999999999999999999999999999.9999999999' AS DECIMAL(38,10))",
            "CAST('-9999999999999999999999999999.9999999999' AS DECIMAL(38,10))",
            "CAST('0.0000000001' AS DECIMAL(38,10))",
            "CAST('-0.0000000001' AS DECIMAL(38,10))",
            "CAST('0' AS DECIMAL(38,10))",
        ],
        lambda i: f"CAST('{i}.5' AS DECIMAL(38,10))",
    ),
    "dbl": (  # not pruned (no exact text form), but grouped and merged on
        "double",
        [
            "CAST('NaN' AS DOUBLE)",
            "CAST('Infinity' AS DOUBLE)",
            "CAST('-Infinity' AS DOUBLE)",
            # not CAST(-0.0 AS DOUBLE): -0.0 is a decimal literal, and a decimal has no -0
            "double('-0.0')",
            "CAST(0.0 AS DOUBLE)",
            "1.7976931348623157E308",
            "4.9E-324",
        ],
        lambda i: f"CAST({i} / 7.0 AS DOUBLE)",
    ),
    "big": (
        "bigint",
        ["9223372036854775807", "-9223372036854775808", "0", "-1"],
        lambda i: f"CAST({i * 1000} AS BIGINT)",
    ),
}


def _models(name: str) -> dict[str, str]:
    a, b = f"{SCHEMA}.{name}_a", f"{SCHEMA}.{name}_b"
    return {
        f"{name}_inner": f"select a.k, a.x, b.y from {a} a join {b} b on a.k = b.k",
        f"{name}_left": f"select a.k, a.x, b.y from {a} a left join {b} b on b.k = a.k",
        f"{name}_grouped": (
            f"select a.k, count(*) as n, sum(b.y) as sy from {a} a join {b} b on a.k = b.k "
            "group by a.k"
        ),
    }


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> SmallProject:
    p = SmallProject(tmp_path_factory.mktemp("adv_keys"), "adv_keys", SCHEMA)
    for name in KEY_TYPES:
        for model, select in _models(name).items():
            p.model(model, select)
    p.start_spark()
    p.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    for name, (dtype, hostile, ordinary) in KEY_TYPES.items():
        for side, col in (("a", "x"), ("b", "y")):
            p.sql(f"DROP TABLE IF EXISTS {SCHEMA}.{name}_{side}")
            p.sql(f"CREATE TABLE {SCHEMA}.{name}_{side} (k {dtype}, {col} int) USING iceberg")
            rows = [f"({ordinary(i)}, {i})" for i in range(5)] + ["(NULL, 99)"]
            rows += [f"({k}, {i})" for i, k in enumerate(hostile[::2])]
            p.sql(f"INSERT INTO {SCHEMA}.{name}_{side} VALUES {', '.join(rows)}")
    return p


def _check_all(p: SmallProject, context: str) -> None:
    for name in KEY_TYPES:
        for model, select in _models(name).items():
            assert_equal_to_sql(p, f"{SCHEMA}.{model}", select, f"{context}, {model}")


def test_hostile_keys_round_trip_listed_and_as_ranges(project: SmallProject):
    p = project
    rnd = random.Random(10)
    run_messages(p)
    _check_all(p, "build")
    # Few keys first (hostile keys new and existing), then many (most hostile keys existing):
    # a third and fourth round would take both paths again over the same kinds of rows.
    for round_no, many in enumerate([False, True]):
        for name, (_, hostile, ordinary) in KEY_TYPES.items():
            for side, col in (("a", "x"), ("b", "y")):
                table = f"{SCHEMA}.{name}_{side}"
                keys = list(hostile)
                if many:  # more keys than are listed: the range / runs path
                    keys += [ordinary(1000 + i) for i in range(MAX_LISTED_KEYS + 50)]
                rnd.shuffle(keys)
                values = [f"({k}, {rnd.randint(0, 9)})" for k in keys]
                p.sql(f"INSERT INTO {table} VALUES {', '.join(values)}")
                doomed = rnd.sample(hostile, max(1, len(hostile) // 3))
                p.sql(f"DELETE FROM {table} WHERE k IN ({', '.join(doomed)}) AND {col} < 5")
                moved = rnd.choice(hostile)
                p.sql(f"UPDATE {table} SET {col} = {col} + 100 WHERE k = {moved}")
        messages = run_messages(p)
        assert all("refreshed" in m for m in messages.values()), messages
        _check_all(p, f"round {round_no} ({'many' if many else 'few'} keys)")
