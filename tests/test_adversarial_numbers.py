"""Adversarial numbers (issue 10, item 7): maintained sums and averages equal Spark's own result.

One dbt project (schema `ivm_adv_numbers`) with four ivm models over the same base table
`nums` (decimal(38,8), decimal(10,2), decimal(38,0), double, int, bigint columns): grouped,
ungrouped, and both again joined to `mult`, whose duplicate keys repeat rows (delta weights of
2 and 3). Every step changes the base tables, runs dbt, and compares each relation with a fresh
run of its SQL: same types, decimals exactly, doubles within a relative 1e-9 (NaN = NaN,
NULL = NULL). Each step's changes sit in their own group key (other columns NULL), so one
scenario's recomputes do not hide another's arithmetic in the grouped models; that also lets
the last four scenarios share their runs (six instead of twelve).

Where the old arithmetic was wrong, the step also pins the exact value Spark gives (the lost
scale digits, the overflowed sums, the value left after deleting an infinity or 1e16), so the
test fails on the old behaviour and not only by comparison.
"""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from ivm_harness.compare import compare_bags, format_diff
from support.small_project import SmallProject

SCHEMA = "ivm_adv_numbers"
COLUMNS = "k, d8, d2, d0, x, i, b"
AGGS = (
    "count(*) as n, count(d8) as c8, sum(d8) as s8, avg(d8) as a8, sum(d2) as s2, "
    "avg(d2) as a2, sum(d0) as s0, avg(d0) as a0, sum(x) as sx, avg(x) as ax, count(x) as cx, "
    "sum(i) as si, avg(i) as ai, sum(b) as sb, avg(b) as ab"
)
MODELS = {
    "grouped": f"select k, {AGGS} from {SCHEMA}.nums group by k",
    "ungrouped": f"select {AGGS} from {SCHEMA}.nums",
    "joined": (
        f"select n.k, {AGGS} from {SCHEMA}.nums n join {SCHEMA}.mult m on n.k = m.k group by n.k"
    ),
    "joined_all": f"select {AGGS} from {SCHEMA}.nums n join {SCHEMA}.mult m on n.k = m.k",
}
INF = "double('inf')"
NINF = "double('-inf')"
NAN = "double('NaN')"


def _row(k: str, d8: str = "NULL", d2: str = "NULL", d0: str = "NULL", x: str = "NULL",
         i: str = "NULL", b: str = "NULL") -> str:  # fmt: skip
    return (
        f"('{k}', CAST({d8} AS DECIMAL(38,8)), CAST({d2} AS DECIMAL(10,2)), "
        f"CAST({d0} AS DECIMAL(38,0)), CAST({x} AS DOUBLE), CAST({i} AS INT), "
        f"CAST({b} AS BIGINT))"
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> SmallProject:
    p = SmallProject(tmp_path_factory.mktemp("adv_numbers"), "adv_numbers", SCHEMA)
    for name, select in MODELS.items():
        p.model(name, select)
    p.start_spark()
    p.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    p.sql(f"DROP TABLE IF EXISTS {SCHEMA}.nums")
    p.sql(
        f"CREATE TABLE {SCHEMA}.nums (k string, d8 decimal(38,8), d2 decimal(10,2), "
        "d0 decimal(38,0), x double, i int, b bigint) USING iceberg"
    )
    p.sql(f"DROP TABLE IF EXISTS {SCHEMA}.mult")
    p.sql(f"CREATE TABLE {SCHEMA}.mult (k string, m int) USING iceberg")
    rows = [
        _row("dec", d8="1234567890.12345678", d2="12345678.90", d0="7"),
        _row("dec", d8="3703703670.37037055", d2="1.01", d0="2"),
        _row("dbl", x="1.5"),
        _row("dbl", x="2.25"),
        _row("int", i="2147483647", b="9223372036854775806"),
        _row("dup", d2="0.05", x="0.125", i="3", b="5"),
        _row("mix", d8="0.5", d2="1.50", d0="1", x="0.5", i="1", b="1"),
        _row("cancel", x="1.0"),  # the small value that 1e16 later swallows
    ]
    p.sql(f"INSERT INTO {SCHEMA}.nums ({COLUMNS}) VALUES {', '.join(rows)}")
    keys = ["dec", "dbl", "int", "cancel", "wide", "big", "inf"]
    mult = [f"('{k}', 1)" for k in keys] + [
        f"('{k}', {m})" for k in ("dup", "mix") for m in (1, 2, 3)
    ]
    p.sql(f"INSERT INTO {SCHEMA}.mult VALUES {', '.join(mult)}")
    return p


def _insert(p: SmallProject, *rows: str) -> None:
    p.sql(f"INSERT INTO {SCHEMA}.nums ({COLUMNS}) VALUES {', '.join(rows)}")


def _run(p: SmallProject) -> dict[str, str]:
    """dbt run of every model; each model's log message."""
    result = p.dbt("run")
    assert result.success, str(result.exception or "") + " ".join(
        str(r.message) for r in (result.result.results if result.result else [])
    )
    return {r.node.name: str(r.message) for r in result.result.results}


def _describe(p: SmallProject, statement: str) -> list[tuple[str, str]]:
    out = []
    for name, dtype, *_ in p.sql(statement):
        if not name or name.startswith("#"):
            break
        out.append((name, dtype))
    return out


def _check(p: SmallProject, step: str) -> dict[str, dict[str, tuple]]:
    """Every relation equals a fresh run of its SQL; returns each model's rows by key."""
    by_model: dict[str, dict[str, tuple]] = {}
    for name, select in MODELS.items():
        want_types = _describe(p, f"DESCRIBE QUERY {select}")
        got_types = _describe(p, f"DESCRIBE TABLE {SCHEMA}.{name}")
        assert got_types == want_types, f"{step}: {name} has types {got_types}"
        floats = [i for i, (_, t) in enumerate(want_types) if t == "double"]
        expected = p.sql(select)
        actual = p.sql(f"SELECT * FROM {SCHEMA}.{name}")
        diff = compare_bags(expected, actual, floats)
        columns = [c for c, _ in want_types]
        assert diff.equal, f"{step}: {name} differs from its SQL\n" + format_diff(columns, diff)
        keyed = name in ("grouped", "joined")
        by_model[name] = {(r[0] if keyed else ""): r for r in actual}
    return by_model


def _cell(rows: dict[str, tuple], key: str, column: str):
    names = ["k", *(a.split(" as ")[1] for a in AGGS.split(", "))]
    if key == "":
        names = names[1:]
    return rows[key][names.index(column)]


def _step(p: SmallProject, step: str) -> tuple[dict[str, str], dict[str, dict[str, tuple]]]:
    messages = _run(p)
    return messages, _check(p, step)


def test_build_equals_sql(project: SmallProject):
    messages, rows = _step(project, "build")
    assert all("built" in m for m in messages.values()), messages
    assert _cell(rows["grouped"], "dec", "s8") == Decimal("4938271560.49382733")


def test_small_decimal_change_keeps_scale_without_recompute(project: SmallProject):
    p = project
    _insert(p, _row("dec", d8="0.00000034", d2="0.01", d0="1"), _row("dbl", x="0.1"))
    messages, rows = _step(p, "insert 0.00000034")
    # The old SUM(x * w) typed decimal(38,8) * bigint as decimal(38,6): ...49382700.
    assert _cell(rows["grouped"], "dec", "s8") == Decimal("4938271560.49382767")
    # avg of decimal(38,8) is decimal(38,12): 3 values -> 12 decimals, not 8.
    assert _cell(rows["grouped"], "dec", "a8") == Decimal("1646090520.164609223333")
    for name, message in messages.items():
        assert "refreshed" in message and "recomputed" not in message, (name, message)
    p.sql(f"DELETE FROM {SCHEMA}.nums WHERE d8 = 0.00000034 OR x = 0.1")
    messages, rows = _step(p, "delete 0.00000034")
    assert _cell(rows["grouped"], "dec", "s8") == Decimal("4938271560.49382733")
    assert _cell(rows["grouped"], "dbl", "sx") == 3.75
    for name, message in messages.items():
        assert "recomputed" not in message, (name, message)


def test_infinities_and_nan_come_and_go(project: SmallProject):
    p = project
    _insert(p, _row("inf", x="2.0"), _row("inf", x=INF))
    _, rows = _step(p, "insert +inf")
    assert _cell(rows["grouped"], "inf", "sx") == math.inf
    _insert(p, _row("inf", x=NINF), _row("inf", x=NAN))
    _, rows = _step(p, "insert -inf, NaN")
    assert math.isnan(_cell(rows["grouped"], "inf", "sx"))
    p.sql(f"DELETE FROM {SCHEMA}.nums WHERE isnan(x)")
    _, rows = _step(p, "delete NaN")
    assert math.isnan(_cell(rows["grouped"], "inf", "sx"))  # +inf and -inf: NaN
    p.sql(f"DELETE FROM {SCHEMA}.nums WHERE x = {INF}")
    _, rows = _step(p, "delete +inf")
    assert _cell(rows["grouped"], "inf", "sx") == -math.inf
    p.sql(f"DELETE FROM {SCHEMA}.nums WHERE x = {NINF}")
    _, rows = _step(p, "delete -inf")
    # The old running sum was inf - inf = NaN here.
    assert _cell(rows["grouped"], "inf", "sx") == 2.0
    assert _cell(rows["grouped"], "inf", "ax") == 2.0


def test_cancellation_of_a_large_double(project: SmallProject):
    p = project
    # 'cancel' holds 1.0 since the build (a group's sum and magnitude are the same whether a
    # refresh or the build put it there).
    _insert(p, _row("cancel", x="1e16"))
    _step(p, "insert 1e16")
    p.sql(f"DELETE FROM {SCHEMA}.nums WHERE x = 1e16")
    messages, rows = _step(p, "delete 1e16")
    # 1e16 + 1.0 rounds to 1e16; subtracting 1e16 again left 0.0 (or 2.0) where SQL gives 1.0.
    assert _cell(rows["grouped"], "cancel", "sx") == 1.0
    assert "recomputed" in messages["grouped"], messages["grouped"]


def test_wide_and_overflowing_decimals_weights_and_bigint_wrap(project: SmallProject):
    """Four scenarios, each in group keys of its own, share six runs, their steps in order:

    * wide: two 38-digit decimal(38,8) values; + 0.00000001; - 0.00000001; an overflow; back;
    * big: decimal(38,0) sum of 8e37; an overflow; back; one 4e37 left;
    * weights: duplicates joined to three `mult` rows (weights 2 and 6) of decimal(10,2),
      double, int and bigint; then of decimal(38,8); deleted again;
    * wrap: a bigint sum that wraps; unwraps.

    The grouped models keep every group apart, so each scenario's values are checked exactly as
    if it ran alone. In the ungrouped models all of them meet in one group, as they did when
    each scenario had runs of its own (the rows stay); those runs recomputed that group every
    time (38-digit sums flag it), so sharing runs hides no incremental step there. The first
    weights step must not recompute `joined`: it runs before the 'wide' and 'big' steps, whose
    groups recompute.
    """
    p = project
    wide = "123456789012345678901234567890.12345678"  # 30 + 8 digits
    wide_sum = Decimal("246913578024691357802469135780.24691356")
    # 'dup' and 'mix' join three `mult` rows: weight 3 in the joined models; the same row
    # inserted twice: weight 2 (6 joined).
    dup = _row("dup", d2="0.07", x="0.1", i="2147483647", b="9223372036854775807")
    mix = _row("mix", d8="0.12345678", d2="0.01", d0="3", x="0.25", i="5", b="7")

    # run 1: weights 1, wrap 1
    _insert(p, dup, dup)
    _insert(p, _row("int", i="2147483647", b="1"), _row("int", i="-5", b="9223372036854775807"))
    messages, rows = _step(p, "weights: duplicates of decimal(10,2), double, int; bigint wraps")
    assert "recomputed" not in messages["joined"], messages["joined"]  # exact products
    assert _cell(rows["joined"], "dup", "s2") == Decimal("0.57")
    # 9223372036854775806 + 1 + 9223372036854775807 wraps to -2 in Spark's bigint SUM.
    assert _cell(rows["grouped"], "int", "sb") == -2

    # run 2: wide 1, big 1, weights 2, wrap 2
    _insert(p, _row("wide", d8=wide), _row("wide", d8=wide))
    _insert(p, _row("big", d0="40000000000000000000000000000000000000", d8="1"))
    _insert(p, _row("big", d0="40000000000000000000000000000000000000"))
    _insert(p, mix, mix)
    p.sql(f"DELETE FROM {SCHEMA}.nums WHERE k = 'int' AND i = -5")
    _, rows = _step(p, "two 38-digit decimals; decimal(38,0) sum of 8e37; "
                       "duplicates of decimal(38,8); bigint sum unwraps")  # fmt: skip
    assert _cell(rows["grouped"], "wide", "s8") == wide_sum
    assert _cell(rows["grouped"], "big", "s0") == Decimal(8 * 10**37)
    assert _cell(rows["joined"], "mix", "s8") == Decimal("2.24074068")

    # run 3: wide 2, big 2, weights 3
    _insert(p, _row("wide", d8="0.00000001"))
    _insert(p, _row("big", d0="30000000000000000000000000000000000000"))
    p.sql(f"DELETE FROM {SCHEMA}.nums WHERE k IN ('dup', 'mix') AND i > 1")
    _, rows = _step(p, "add 0.00000001 to a 38-digit sum; decimal(38,0) overflow; "
                       "delete the duplicates")  # fmt: skip
    assert _cell(rows["grouped"], "wide", "s8") == Decimal(
        "246913578024691357802469135780.24691357"
    )
    assert _cell(rows["grouped"], "big", "s0") is None  # Spark's SUM: NULL on overflow

    # run 4: wide 3, big 3
    p.sql(f"DELETE FROM {SCHEMA}.nums WHERE k = 'wide' AND d8 = 0.00000001")
    p.sql(f"DELETE FROM {SCHEMA}.nums WHERE d0 = 30000000000000000000000000000000000000")
    _, rows = _step(p, "delete 0.00000001; decimal(38,0) back from overflow")
    assert _cell(rows["grouped"], "wide", "s8") == wide_sum
    # The old MERGE turned this into a large negative value.
    assert _cell(rows["grouped"], "big", "s0") == Decimal(8 * 10**37)

    # run 5: wide 4, big 4
    _insert(p, _row("wide", d8="800000000000000000000000000000"))
    p.sql(f"DELETE FROM {SCHEMA}.nums WHERE k = 'big' AND d8 IS NULL")
    _, rows = _step(p, "decimal(38,8) overflow; one 4e37 left")
    assert _cell(rows["grouped"], "wide", "s8") is None
    assert _cell(rows["grouped"], "big", "s0") == Decimal(4 * 10**37)

    # run 6: wide 5
    p.sql(f"DELETE FROM {SCHEMA}.nums WHERE d8 = 800000000000000000000000000000")
    _, rows = _step(p, "decimal(38,8) back from overflow")
    assert _cell(rows["grouped"], "wide", "s8") == wide_sum
