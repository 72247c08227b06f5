"""The pseudo-random SQL expressions every generated value of `datagen.py` is drawn with.

Each is a Spark SQL expression over a seed string, a salt naming the column and the row's key
columns (`xxhash64`), so the same key and seed give the same value in every run, and another
seed (a change round's) gives another draw:

>>> uniform("s", "qty", ["k"], 1, 50)
"(1 + pmod(xxhash64('s', 'qty', k), 50))"
>>> chance("s", "flag", ["k"], 10)
"((0 + pmod(xxhash64('s', 'flag', k), 100)) < 10)"
"""

from __future__ import annotations

from collections.abc import Sequence

WORDS = (
    "furiously", "carefully", "quickly", "slyly", "blithely", "final", "special", "pending",
    "regular", "express", "ironic", "bold", "deposits", "requests", "accounts", "packages",
)  # fmt: skip
#: The first order date and how many days later the last one is.
START_DATE = "1992-01-01"
ORDER_DATE_DAYS = 2406  # 1992-01-01 .. 1998-08-02


def keyed_hash(seed: str, salt: str, keys: Sequence[str]) -> str:
    """The 64-bit hash every draw of a row is made from: of the seed, a salt and its keys."""
    return f"xxhash64('{seed}', '{salt}', {', '.join(keys)})"


def uniform(seed: str, salt: str, keys: Sequence[str], low: int, high: int) -> str:
    """An integer in [low, high], drawn from the seed, a salt and the key columns."""
    return f"({low} + pmod({keyed_hash(seed, salt, keys)}, {high - low + 1}))"


def pick(seed: str, salt: str, keys: Sequence[str], values: Sequence[str]) -> str:
    """One of `values`, drawn from the seed, a salt and the key columns."""
    literals = ", ".join(f"'{v}'" for v in values)
    index = f"CAST({uniform(seed, salt, keys, 1, len(values))} AS INT)"
    return f"element_at(array({literals}), {index})"


def chance(seed: str, salt: str, keys: Sequence[str], percent: int) -> str:
    """A condition true for about `percent` % of the keys."""
    return f"({uniform(seed, salt, keys, 0, 99)} < {percent})"


def money(expression: str) -> str:
    return f"CAST({expression} AS DECIMAL(12,2))"


def comment(seed: str, salt: str, keys: Sequence[str]) -> str:
    """A TPC-H-like comment: three words."""
    return (
        "concat_ws(' ', " + ", ".join(pick(seed, f"{salt}{i}", keys, WORDS) for i in range(3)) + ")"
    )


def customer_from_pool(seed: str, salt: str, keys: Sequence[str], max_custkey: int) -> str:
    """A customer key in 1..max_custkey that is no multiple of 3 (those never order)."""
    draw = uniform(seed, salt, keys, 0, max(1, 2 * max_custkey // 3) - 1)
    return f"CAST(3 * ({draw} DIV 2) + pmod({draw}, 2) + 1 AS BIGINT)"


def order_date(seed: str, orderkey: str) -> str:
    """The date of an order (lineitem's ship dates follow it)."""
    days = uniform(seed, "o_orderdate", [orderkey], 0, ORDER_DATE_DAYS - 1)
    return f"date_add(DATE'{START_DATE}', CAST({days} AS INT))"


def retail_price(partkey: str) -> str:
    """TPC-H's part price formula."""
    return f"((90000 + pmod({partkey} DIV 10, 20001) + 100 * pmod({partkey}, 1000)) / 100)"
