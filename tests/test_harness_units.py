"""Unit tests of the harness's own pieces (no Spark): bag comparison, literals, data, specs."""

from __future__ import annotations

import datetime as dt
import random
import re
from decimal import Decimal

import pytest
from ivm_harness import datagen
from ivm_harness.compare import compare_bags, floats_close, format_diff
from ivm_harness.config import HarnessConfig, round_kinds
from ivm_harness.families import FAMILIES
from ivm_harness.spec import Col, Family, Table, check_unique_names, collect_tables


def test_bags_equal_ignoring_order() -> None:
    """Order does not matter, multiplicity does."""
    assert compare_bags([(1, "a"), (2, None)], [(2, None), (1, "a")]).equal
    diff = compare_bags([(1, "a"), (1, "a")], [(1, "a")])
    assert diff.missing == [((1, "a"), 1)] and not diff.extra


def test_bags_null_equals_null_and_decimals_exact() -> None:
    """NULL matches NULL; decimals compare by value and are never approximated."""
    assert compare_bags([(None, Decimal("1.50"))], [(None, Decimal("1.5"))]).equal
    diff = compare_bags([(Decimal("1.50"),)], [(Decimal("1.51"),)], float_cols=[])
    assert diff.missing and diff.extra


def test_bags_float_tolerance() -> None:
    """Floats within relative 1e-9 match; a real difference does not."""
    assert compare_bags([("k", 0.1 + 0.2)], [("k", 0.3)], float_cols=[1]).equal
    assert compare_bags([("k", 1e12)], [("k", 1e12 * (1 + 1e-10))], float_cols=[1]).equal
    assert not compare_bags([("k", 1.0)], [("k", 1.0 + 1e-6)], float_cols=[1]).equal
    assert not compare_bags([("k", 1.0)], [("j", 1.0)], float_cols=[1]).equal
    assert not compare_bags([("k", None)], [("k", 0.0)], float_cols=[1]).equal
    assert floats_close(float("nan"), float("nan"))
    # duplicates with floats: both copies need a partner
    diff = compare_bags([("k", 0.3), ("k", 0.3)], [("k", 0.1 + 0.2)], float_cols=[1])
    assert diff.missing == [(("k", 0.3), 1)] and not diff.extra


def test_format_diff_shows_counts() -> None:
    """The failure text names missing and extra rows with their counts."""
    diff = compare_bags([(1, "a"), (1, "a"), (2, "b")], [(3, "c")])
    text = format_diff(["n", "s"], diff)
    assert "MISSING" in text and "EXTRA" in text
    assert re.search(r"2\s+\|\s+1\s+\|\s+'a'", text), text


def test_literals() -> None:
    """Literals render every supported type, with NULLs typed and strings escaped."""
    assert datagen.sql_literal(None, "decimal(10,2)") == "CAST(NULL AS DECIMAL(10,2))"
    assert datagen.sql_literal("it's \\", "string") == "'it\\'s \\\\'"
    assert datagen.sql_literal(5, "bigint") == "5L"
    assert datagen.sql_literal(Decimal("1.5"), "decimal(10,2)") == "CAST('1.50' AS DECIMAL(10,2))"
    assert datagen.sql_literal(0.1, "double") == "CAST('0.1' AS DOUBLE)"
    assert datagen.sql_literal(dt.date(2024, 2, 29), "date") == "DATE'2024-02-29'"
    assert datagen.sql_literal(False, "boolean") == "FALSE"


def test_generated_data_has_nulls_duplicates_negatives_fractions() -> None:
    """Initial data of the shared tables has what the brief asks for."""
    table = next(t for t in collect_tables(FAMILIES) if t.name == "t1")
    rows: list[datagen.Row] = []
    for seed in range(5):
        rows += datagen.initial_rows(table, datagen.table_rng(seed, "init", table))
    for i, col in enumerate(table.cols):
        assert any(r[i] is None for r in rows), f"no NULL in {col.name}"
    assert len(set(rows)) < len(rows), "no duplicate rows"
    x = [r[5] for r in rows if r[5] is not None]
    assert any(v < 0 for v in x) and any(v != int(v) for v in x)


def test_change_statements_cover_all_kinds() -> None:
    """Over many draws the generator emits inserts, updates to NULL and back, and deletes."""
    table = next(t for t in collect_tables(FAMILIES) if t.name == "t1")
    rng = random.Random(7)
    rows = datagen.initial_rows(table, rng)
    stmts = [datagen.change_statement(table, "s", rows, rng) for _ in range(400)]
    assert any(s.startswith("INSERT") for s in stmts)
    assert any(" = NULL WHERE" in s for s in stmts)
    assert any("IS NULL" in s and s.startswith("UPDATE") for s in stmts)
    assert any(s.startswith("DELETE") and "WHERE" in s for s in stmts)
    assert "DELETE FROM s.t1" in stmts
    assert datagen.change_statement(table, "s", [], rng).startswith("INSERT")


def test_extreme_deletes_hit_each_column_s_first_values() -> None:
    """The extremes delete names a column's one or two smallest or largest values (NaN the
    largest double, NULL never), so it removes every group's extreme they are in."""
    table = Table("e", (Col("k", "string", key=True), Col("v", "int"), Col("x", "double")))
    rows = [("a", 5, 1.0), ("a", 1, float("nan")), ("b", 3, -2.5), ("b", None, None)]
    ordered = {  # each column's values in Spark's order, as the delete names them
        "k": ["k = 'a'", "k = 'b'"],
        "v": ["v = 1", "v = 3", "v = 5"],
        "x": [
            "x = CAST('-2.5' AS DOUBLE)",
            "x = CAST('1.0' AS DOUBLE)",
            "x = CAST('nan' AS DOUBLE)",
        ],
    }
    ends: set[tuple[str, ...]] = set()
    rng = random.Random(3)
    for _ in range(300):
        stmt = datagen._delete_extremes(table, "s", rows, rng)
        assert stmt is not None and stmt.startswith("DELETE FROM s.e WHERE "), stmt
        terms = stmt.removeprefix("DELETE FROM s.e WHERE ").split(" OR ")
        order = ordered[terms[0].split(" ")[0]]
        n = len(terms)
        assert n in (1, 2) and set(terms) in (set(order[:n]), set(order[::-1][:n])), stmt
        ends.add(tuple(sorted(terms)))
    assert ("v = 5",) in ends and ("x = CAST('nan' AS DOUBLE)",) in ends  # the largest
    assert ("v = 1", "v = 3") in ends  # the two smallest


def test_replay_is_deterministic() -> None:
    """The same seed gives the same data and changes."""
    table = FAMILIES[0].tables[0]
    a = datagen.initial_rows(table, datagen.table_rng(42, "init", table))
    b = datagen.initial_rows(table, datagen.table_rng(42, "init", table))
    assert a == b


def test_specs_validate() -> None:
    """Family and table declarations are checked."""
    t = Table("tt", (Col("k", "int", key=True),))
    with pytest.raises(ValueError):
        Col("k", "float")
    with pytest.raises(ValueError):
        Family("f", (t,), "select * from {{ source('base', 'other') }}")
    with pytest.raises(ValueError):
        collect_tables(
            [
                Family("f1", (t,), "select * from {{ source('base', 'tt') }}"),
                Family(
                    "f2",
                    (Table("tt", (Col("z", "int"),)),),
                    "select * from {{ source('base', 'tt') }}",
                ),
            ]
        )
    check_unique_names(FAMILIES)
    collect_tables(FAMILIES)


def test_round_plan() -> None:
    """The default plan has a build, a round without changes and an emptying round."""
    kinds = round_kinds(HarnessConfig(seed=1).rounds)
    assert kinds[0] == "build" and "noop" in kinds and "empty" in kinds and len(kinds) == 5
    # mixed rounds on the build's state and after every group was removed (the refill)
    assert kinds[1] == "mixed" and kinds[-2:] == ["empty", "mixed"]
    assert round_kinds(8)[-1] == "mixed"
