"""Factored delta terms (`compiler/optimize/factored.py`): the terms of two or more changed inputs after
the first read the first input once, joined with the delta of the rest of the chain.

Pure tests (sqlglot only) check when the rewrite is taken and that the first input is read
once; the Spark tests refresh models of that shape after scripted changes of two, three and
four tables (NULL join keys, conditions across the bracket, a dimension emptied and refilled)
and check each relation against a fresh run of its SQL.
"""

from __future__ import annotations

import pytest
from sqlglot import exp
from support.adversarial import assert_equal_to_sql, run_messages
from support.delta_sql import delta_select
from support.small_project import SmallProject

from dbt.adapters.spark_ivm.compiler.ir import KeyRange

SCHEMAS = {
    "s.orders": [("o_orderkey", "bigint"), ("o_custkey", "bigint"), ("o_prio", "string")],
    "s.customers": [("c_custkey", "bigint"), ("c_nationkey", "int"), ("c_seg", "string")],
    "s.nations": [("n_nationkey", "int"), ("n_name", "string"), ("n_code", "bigint")],
}
SEGMENTS = (
    "select distinct n.n_name, c.c_seg, o.o_prio from orders o "
    "join customers c on o.o_custkey = c.c_custkey "
    "join nations n on c.c_nationkey = n.n_nationkey"
)


def _delta_sql(text: str, changed: set[str], ranges=None) -> str:
    return delta_select(text, SCHEMAS, changed, ranges).sql(dialect="spark")


def _reads(text: str, relation: str) -> int:
    return text.count(f"`{relation.split('.')[0]}`.`{relation.split('.')[1]}`")


def test_two_changed_dimensions_read_the_first_input_once():
    text = _delta_sql(SEGMENTS, {"customers", "nations"})
    assert _reads(text, "s.orders") == 1, text
    assert "__ivm_f" in text
    # the bracket: log(c) JOIN n@old, and c@new JOIN log(n)
    assert "log_customers" in text and "log_nations" in text
    assert _reads(text, "s.customers") == 1 and _reads(text, "s.nations") == 1


def test_every_input_changed_keeps_the_first_inputs_own_term():
    text = _delta_sql(SEGMENTS, {"orders", "customers", "nations"})
    assert _reads(text, "s.orders") == 1 and "log_orders" in text, text


def test_one_changed_dimension_is_not_factored():
    text = _delta_sql(SEGMENTS, {"customers", "orders"})
    assert "__ivm_f" not in text
    assert _reads(text, "s.orders") == 1  # the customers term


def test_an_outer_join_or_an_on_reading_the_first_input_is_not_factored():
    left = SEGMENTS.replace("join nations", "left join nations")
    assert "__ivm_f" not in _delta_sql(left, {"customers", "nations"})
    star = SEGMENTS.replace(
        "c.c_nationkey = n.n_nationkey", "c.c_nationkey = n.n_nationkey and o.o_prio <> n.n_name"
    )
    assert "__ivm_f" not in _delta_sql(star, {"customers", "nations"})


def test_when_each_term_prunes_the_first_input_the_pruned_reads_stay():
    """Nations joined to orders directly through WHERE: both dimension terms prune orders by
    their own keys, so factoring would replace two pruned reads by one whole read."""
    ranges = {
        (1, "c_custkey"): KeyRange("1", "5", ("1", "5")),
        (2, "n_nationkey"): KeyRange("3", "3", ("3",)),
        (2, "n_code"): KeyRange("7", "7", ("7",)),
    }
    got = _delta_sql(SEGMENTS + " where o.o_orderkey = n.n_code", {"customers", "nations"}, ranges)
    assert "__ivm_f" not in got and _reads(got, "s.orders") == 2, got
    # Without that link the nations term reads orders whole: factored. The bracket keeps the
    # key filter between its own inputs (c by the nations log's keys); orders has none.
    got = _delta_sql(SEGMENTS, {"customers", "nations"}, ranges)
    assert "__ivm_f" in got and _reads(got, "s.orders") == 1
    bracket = exp.maybe_parse(got, dialect="spark").find(exp.Union)
    assert bracket is not None and "c_nationkey` BETWEEN" in bracket.sql(dialect="spark")
    assert "o_custkey` BETWEEN" not in got


# ------------------------------------------------------------------------------------------------
# refreshes on Spark
# ------------------------------------------------------------------------------------------------

SCHEMA = "ivm_factored"
DISTINCT_MODEL = "segments"
DISTINCT_SELECT = f"""select distinct n.name, c.seg, o.prio
from {SCHEMA}.ords o
join {SCHEMA}.custs c on o.cust = c.cid and (c.credit >= o.qty or o.qty is null)
join {SCHEMA}.nats n on c.nation = n.nid and n.region is distinct from c.seg
where o.amount is null or o.amount > n.nid - 5"""
AGG_MODEL = "region_totals"
AGG_SELECT = f"""select r.rname, c.seg, count(*) as n, sum(o.amount) as amount,
       max(c.credit) as top_credit, min(o.qty) as min_qty
from {SCHEMA}.ords o
join {SCHEMA}.custs c on o.cust = c.cid
join {SCHEMA}.nats n on c.nation = n.nid
join {SCHEMA}.regs r on n.region = r.rid
group by r.rname, c.seg"""
MODELS = {DISTINCT_MODEL: DISTINCT_SELECT, AGG_MODEL: AGG_SELECT}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> SmallProject:
    p = SmallProject(tmp_path_factory.mktemp("factored"), "factored", SCHEMA)
    for name, select in MODELS.items():
        p.model(name, select)
    p.start_spark()
    p.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    for name, columns, rows in (
        (
            "ords",
            "oid int, cust int, prio string, qty int, amount decimal(10,2)",
            (
                "(1, 1, 'h', 1, 10.00), (2, 1, 'l', null, null), (3, 2, 'h', 5, 3.50), "
                "(4, 3, 'm', 2, 7.25), (5, null, 'h', 1, 1.00), (6, 4, 'l', 9, 99.99), "
                "(6, 4, 'l', 9, 99.99), (7, 5, null, 0, -2.00)"
            ),
        ),
        (
            "custs",
            "cid int, nation int, seg string, credit int",
            (
                "(1, 1, 'a', 5), (2, 1, 'b', 1), (3, 2, 'a', null), (4, 3, 'c', 10), "
                "(5, null, 'b', 3), (5, 2, 'b', 3)"
            ),
        ),
        (
            "nats",
            "nid int, name string, region string",
            "(1, 'n1', 'r1'), (2, 'n2', 'a'), (3, 'n3', null), (4, 'n4', 'r2')",
        ),
        ("regs", "rid string, rname string", "('r1', 'east'), ('a', 'west'), ('r2', 'north')"),
    ):
        p.sql(f"DROP TABLE IF EXISTS {SCHEMA}.{name}")
        p.sql(f"CREATE TABLE {SCHEMA}.{name} ({columns}) USING iceberg")
        p.sql(f"INSERT INTO {SCHEMA}.{name} VALUES {rows}")
    return p


def _check(p: SmallProject, context: str) -> None:
    messages = run_messages(p)
    for name, select in MODELS.items():
        assert "refreshed" in messages[name] or "built" in messages[name], messages[name]
        assert_equal_to_sql(p, f"{SCHEMA}.{name}", select, context)


ROUNDS = (
    (
        "two dimensions",
        [
            "UPDATE {s}.custs SET nation = 3, credit = 20 WHERE cid = 1",
            "INSERT INTO {s}.custs VALUES (6, 4, 'c', 2), (null, 1, 'a', 1)",
            "UPDATE {s}.nats SET region = 'a', name = 'n2x' WHERE nid = 2",
            "DELETE FROM {s}.nats WHERE nid = 3",
        ],
    ),
    (
        "every table",
        [
            "INSERT INTO {s}.ords VALUES (8, 6, 'h', 1, 4.00), (9, 1, 'l', 3, null)",
            "DELETE FROM {s}.ords WHERE oid = 6",
            "UPDATE {s}.custs SET seg = 'r1' WHERE cid = 2",
            "INSERT INTO {s}.nats VALUES (3, 'n3', 'r2'), (null, 'nx', 'r1')",
            "UPDATE {s}.regs SET rname = 'south' WHERE rid = 'r2'",
        ],
    ),
    (
        "the last three inputs, a dimension emptied",
        [
            "DELETE FROM {s}.custs",
            "UPDATE {s}.nats SET nid = nid + 1 WHERE nid is not null",
            "INSERT INTO {s}.regs VALUES ('r1', 'east2')",
        ],
    ),
    (
        "the dimension refilled beside the others",
        [
            (
                "INSERT INTO {s}.custs VALUES (1, 2, 'a', 5), (2, 3, 'b', 1), (4, 4, 'c', 10), "
                "(4, 4, 'c', 10), (5, 5, 'b', null)"
            ),
            "DELETE FROM {s}.regs WHERE rname = 'east'",
            "UPDATE {s}.nats SET region = null WHERE nid = 4",
        ],
    ),
)


def test_factored_refreshes_equal_their_sql(project: SmallProject) -> None:
    _check(project, "build")
    for context, statements in ROUNDS:
        for statement in statements:
            project.sql(statement.format(s=SCHEMA))
        _check(project, context)
