"""Key pruning of delta terms (pure: sqlglot only, no Spark). The differential harness checks
that pruned refreshes stay equal to the SQL; these check which filters are derived."""

from __future__ import annotations

from dbt.adapters.spark_ivm.compiler.frontend.analyze import analyze
from dbt.adapters.spark_ivm.compiler.ir import KeyRange
from dbt.adapters.spark_ivm.compiler.operators.delta import DELTA, NEW, Leaf, Prefix, Term
from dbt.adapters.spark_ivm.compiler.optimize import pruning
from dbt.adapters.spark_ivm.compiler.sql.templates import sql

SCHEMAS = {
    "s.lineitem": [("l_orderkey", "bigint"), ("l_price", "decimal(12,2)"), ("l_tag", "double")],
    "s.orders": [("o_orderkey", "bigint"), ("o_custkey", "int"), ("o_tag", "double")],
    "s.customers": [("c_custkey", "int"), ("c_name", "string")],
}


def query(text: str):
    return analyze(text, "m", SCHEMAS, "s")


def test_links_of_an_inner_join_chain_go_both_ways_and_skip_inexact_types():
    q = query(
        "select c.c_name, sum(l.l_price) from lineitem l join orders o "
        "on l.l_orderkey = o.o_orderkey and l.l_tag = o.o_tag "
        "join customers c on o.o_custkey = c.c_custkey group by c.c_name"
    )
    links = {(x.delta, x.delta_column, x.other, x.other_column) for x in pruning.key_links(q)}
    assert links == {
        (0, "l_orderkey", 1, "o_orderkey"),
        (1, "o_orderkey", 0, "l_orderkey"),
        (1, "o_custkey", 2, "c_custkey"),
        (2, "c_custkey", 1, "o_custkey"),
    }  # the double equality l_tag = o_tag gives no link: its text form may not cast back


def test_comma_join_equalities_in_where_are_links():
    """The WHERE equality of a comma join is the ON of its join (`comma_joins.py`)."""
    q = query("select l.l_price from lineitem l, orders o where l.l_orderkey = o.o_orderkey")
    assert [x.step for x in pruning.key_links(q)] == [1, 1]
    q = query(
        "select l.l_price from lineitem l, orders o "
        "where l.l_orderkey = o.o_orderkey or l.l_price > 0"
    )
    assert [x.step for x in pruning.key_links(q)] == []


def test_outer_join_links_prune_only_terms_that_join_inner():
    """`customers c LEFT JOIN orders o JOIN lineitem l`: the LEFT JOIN's equality holds in the
    terms that join o themselves (its matched part), never where the prefix keeps the outer
    join (a filter there would drop c's padded rows); the inner step's equality holds in
    every term."""
    q = query(
        "select c.c_name, l.l_price from customers c "
        "left join orders o on o.o_custkey = c.c_custkey "
        "join lineitem l on l.l_orderkey = o.o_orderkey"
    )
    steps = {(x.delta, x.other): x.step for x in pruning.key_links(q)}
    assert steps == {(0, 1): 1, (1, 0): 1, (1, 2): 2, (2, 1): 2}
    d_c = Term(base=Leaf(0, DELTA)).with_join(1, NEW).with_join(2, NEW)
    d_l = Term(base=Prefix(1, NEW), joins=((2, DELTA),))
    assert pruning.enforced(d_c, q, 1) and pruning.enforced(d_c, q, 2)
    assert not pruning.enforced(d_l, q, 1)  # c LEFT JOIN o inside the prefix
    assert pruning.enforced(d_l, q, 2) and pruning.enforced(d_l, q, None)
    inner = query(
        "select c.c_name from customers c join orders o on o.o_custkey = c.c_custkey "
        "join lineitem l on l.l_orderkey = o.o_orderkey"
    )
    assert pruning.enforced(d_l, inner, 1)
    padded = query(
        "select c.c_name from customers c join orders o on o.o_custkey = c.c_custkey "
        "right join lineitem l on l.l_orderkey = o.o_orderkey"
    )
    in_prefix = Term(base=Prefix(2, NEW))
    assert pruning.enforced(in_prefix, padded, 2) is False  # the RIGHT JOIN itself
    assert pruning.enforced(in_prefix, padded, 1) is False  # c, o NULL-padded by it
    assert pruning.enforced(Term(base=Prefix(1, NEW)), padded, 1)

    ranges = {(2, "l_orderkey"): KeyRange("5", "5", ("5",))}
    (pruned,) = pruning.prune_terms([d_l], q, pruning.key_links(q), ranges)
    assert [sql(f) for f in pruned.filters] == [
        (
            "`o`.`o_orderkey` BETWEEN CAST('5' AS BIGINT) AND CAST('5' AS BIGINT) "
            "AND `o`.`o_orderkey` IN (CAST('5' AS BIGINT))"
        )
    ]


def test_terms_get_range_and_listed_values_or_false_for_an_all_null_log():
    q = query("select l.l_price from lineitem l join orders o on l.l_orderkey = o.o_orderkey")
    links = pruning.key_links(q)
    terms = [
        Term(base=Leaf(0, DELTA)).with_join(1, NEW),
        Term(base=Prefix(0, NEW), joins=((1, DELTA),)),
    ]
    ranges = {
        (0, "l_orderkey"): KeyRange("3", "9", ("3", "9")),
        (1, "o_orderkey"): KeyRange(None, None, ()),
    }
    pruned = pruning.prune_terms(terms, q, links, ranges)
    first = [sql(f) for f in pruned[0].filters]
    assert first == [
        (
            "`o`.`o_orderkey` BETWEEN CAST('3' AS BIGINT) AND CAST('9' AS BIGINT) "
            "AND `o`.`o_orderkey` IN (CAST('3' AS BIGINT), CAST('9' AS BIGINT))"
        )
    ]
    assert [sql(f) for f in pruned[1].filters] == ["FALSE"]


def test_key_stats_are_parsed_with_and_without_values():
    row = ["1", "250", [str(i) for i in range(201)], None, None, []]
    types = {"a": "int", "b": "string"}
    got = pruning.parse_key_stats(row, ["a", "b"], True, {"a": "string", "b": "int"})
    assert got["a"] == KeyRange("1", "250", None)  # too many values to list
    assert got["b"] == KeyRange(None, None, ())
    assert pruning.parse_key_stats(["x", "y"], ["a"], False, types)["a"].values is None
    assert pruning.key_stats_sql("v", ["a", "b"], True, types) == (
        "SELECT CAST(MIN(`a`) AS STRING), CAST(MAX(`a`) AS STRING), "
        "COLLECT_SET(CAST(`a` AS STRING)), HEX(MIN(`b`)), HEX(MAX(`b`)), COLLECT_SET(HEX(`b`)) "
        "FROM `v`"
    )


def test_keys_travel_as_digits_or_hex_and_come_back_as_typed_literals():
    """Strings as the hex of their bytes (quotes, `${..}`, NUL never reach the SQL text),
    dates as day numbers (years beyond 9999 have no ISO text), numbers as their text; any
    other text is refused rather than written into SQL."""
    link = pruning.KeyLink(0, "k", 1, "ok", "string")
    keys = KeyRange("00", "7B", ("00", "247B787D", "7B"))
    assert sql(pruning.key_filter(link, "o", keys)) == (
        "`o`.`ok` BETWEEN CAST(UNHEX('00') AS STRING) AND CAST(UNHEX('7B') AS STRING) AND "
        "`o`.`ok` IN (CAST(UNHEX('00') AS STRING), CAST(UNHEX('247B787D') AS STRING), "
        "CAST(UNHEX('7B') AS STRING))"
    )
    date_link = pruning.KeyLink(0, "d", 1, "od", "date")
    days = KeyRange("-719162", "2932897", None)
    assert sql(pruning.key_filter(date_link, "o", days)) == (
        "`o`.`od` BETWEEN DATE_FROM_UNIX_DATE(-719162) AND DATE_FROM_UNIX_DATE(2932897)"
    )
    assert pruning.key_runs(["-719162", "-719161", "2932897"], "date") == (
        ("-719162", "-719161"),
        ("2932897", "2932897"),
    )
    for dtype, text in [("string", "'x'"), ("string", "7"), ("int", "1 OR 1=1"),
                        ("date", "2024-01-01"), ("decimal(10,2)", "NaN")]:  # fmt: skip
        try:
            pruning.KeyCodec.of(dtype).decode(text, dtype)
        except ValueError:
            continue
        raise AssertionError(f"{dtype} key text {text!r} was accepted")


def test_many_keys_split_into_runs_at_their_largest_gaps():
    """Updates in the middle of a table plus inserts with new keys at the top: two runs, not
    one range over everything between them."""
    middle = [str(k) for k in range(10_000, 10_400)]
    top = [str(k) for k in range(99_000, 99_300)]
    row = ["10000", "99299", [*top, *middle]]
    (got,) = pruning.parse_key_stats(row, ["k"], True, {"k": "bigint"}).values()
    assert got.values is None and got.runs == (("10000", "10399"), ("99000", "99299"))
    link = pruning.KeyLink(0, "k", 1, "ok", "bigint")
    assert sql(pruning.key_filter(link, "o", got)) == (
        "(`o`.`ok` BETWEEN CAST('10000' AS BIGINT) AND CAST('10399' AS BIGINT) "
        "OR `o`.`ok` BETWEEN CAST('99000' AS BIGINT) AND CAST('99299' AS BIGINT))"
    )
    # evenly spaced keys stay one run; at most MAX_RUNS runs; dates and decimals have gaps;
    # strings have none (one range)
    assert pruning.key_runs([str(k) for k in range(0, 900, 3)], "int") == (("0", "897"),)
    scattered = [str(k * k) for k in range(300)]
    runs = pruning.key_runs(scattered, "bigint")
    assert runs is not None and len(runs) == pruning.MAX_RUNS
    assert all(any(int(lo) <= int(v) <= int(hi) for lo, hi in runs) for v in scattered)
    assert pruning.key_runs(["19723", "19724", "20269"], "date") == (
        ("19723", "19724"),
        ("20269", "20269"),
    )
    assert pruning.key_runs(["9.50", "10.00", "250.25"], "decimal(12,2)") == (
        ("9.50", "10.00"),
        ("250.25", "250.25"),
    )
    assert pruning.key_runs(["61", "62", "7A7A"], "string") is None
