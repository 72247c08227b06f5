"""Auxiliary join states (issue 11, item 2): a dimension change joins A, not the facts.

A model `agg(lines ⋈ ords ⋈ custs)` with `ivm_aux_states='always'` is kept as A = lines ⋈
ords pre-aggregated by (o.cust, o.status) and the model over A ⋈ custs
(`compiler/optimize/aux_state.py`, `compiler/runtime/chain.py`); a LEFT join (`custs LEFT
JOIN ords`) keeps its preserved side as the dimension. Scripted changes on the dimension, on
the facts and on both; a failure between A's commit and the model's; switching the setting
off and on. After every run the relation must equal a fresh run of the model's SQL over the
base tables, and the log line must say which plan ran.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.adversarial import assert_equal_to_sql, run_messages
from support.small_project import SmallProject

from dbt.adapters.spark_ivm import session_metadata
from dbt.adapters.spark_ivm.compiler.relations import Target
from dbt.adapters.spark_ivm.compiler.runtime import aux_choice
from dbt.adapters.spark_ivm.compiler.runtime.executor import MetadataReader

SCHEMA = "ivm_aux_states"
MODEL = "aux_revenue"
FLAT = "aux_refused"
SELECT = f"""select c.nation, o.status, count(*) as n, count(l.qty) as n_qty,
       sum(l.price) as revenue, sum(l.qty) as qty, min(l.qty) as min_qty,
       max(l.price) as max_price, sum(l.qty) * 2 as qty2
from {SCHEMA}.lines l
join {SCHEMA}.ords o on l.ok = o.ok
join {SCHEMA}.custs c on o.cust = c.cid
where c.name <> 'zz' and (l.qty is null or l.qty <> 3)
group by c.nation, o.status
having count(*) > 1 or max(l.price) > 50"""
# avg has no exact partial form here: the model stays flat, even with 'always'.
REFUSED = f"""select c.nation, avg(l.price) as avg_price, count(*) as n
from {SCHEMA}.lines l join {SCHEMA}.ords o on l.ok = o.ok join {SCHEMA}.custs c on o.cust = c.cid
group by c.nation"""


# A LEFT join keeps its preserved side as D: customers without orders, one padded row each,
# count 1 in count(*) and 0 in count(o.ok); a condition on D alone stays in the ON, one on
# the orders filters them before A groups them.
OUTER = "aux_outer"
OUTER_SELECT = f"""select c.nation, o.status, count(*) as n, count(o.ok) as n_orders,
       sum(o.ok) as ok_sum, max(o.ok) as last_ok
from {SCHEMA}.custs c
left join {SCHEMA}.ords o on o.cust = c.cid and o.status <> 'X' and c.name <> 'zz'
group by c.nation, o.status"""


# 'auto' keeps an aux state when the largest fact table has 10x the dimension's rows: 13
# lines against 1 tag at the build.
AUTO = "aux_auto"
AUTO_SELECT = f"""select t.label, count(*) as n, sum(l.qty) as qty, max(l.price) as max_price
from {SCHEMA}.lines l join {SCHEMA}.tags t on l.qty = t.qty
group by t.label"""


def _model(p: SmallProject, name: str, select: str, mode: str) -> None:
    p.model(name, f"{{{{ config(ivm_aux_states='{mode}') }}}}\n{select}")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> SmallProject:
    p = SmallProject(tmp_path_factory.mktemp("aux_states"), "aux_states", SCHEMA)
    _model(p, MODEL, SELECT, "always")
    _model(p, FLAT, REFUSED, "always")
    _model(p, AUTO, AUTO_SELECT, "auto")
    _model(p, OUTER, OUTER_SELECT, "always")
    p.start_spark()
    p.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    for name, columns in (
        ("lines", "ok int, price decimal(10,2), qty int"),
        ("ords", "ok int, cust int, status string"),
        ("custs", "cid int, nation int, name string"),
        ("tags", "qty int, label string"),
    ):
        p.sql(f"DROP TABLE IF EXISTS {SCHEMA}.{name}")
        p.sql(f"CREATE TABLE {SCHEMA}.{name} ({columns}) USING iceberg")
    return p


def _check(p: SmallProject, context: str, aux: bool = True) -> str:
    messages = run_messages(p)
    message = messages[MODEL]
    assert_equal_to_sql(p, f"{SCHEMA}.{MODEL}", SELECT, context)
    assert_equal_to_sql(p, f"{SCHEMA}.{FLAT}", REFUSED, context)
    assert_equal_to_sql(p, f"{SCHEMA}.{AUTO}", AUTO_SELECT, context)
    assert_equal_to_sql(p, f"{SCHEMA}.{OUTER}", OUTER_SELECT, context)
    assert "aux state" in messages[OUTER], f"{context}: {messages[OUTER]}"
    assert ("aux state" in message) is aux, f"{context}: {message}"
    assert "aux state" not in messages[FLAT], f"{context}: {messages[FLAT]}"
    return message


def test_aux_state_follows_dimension_and_fact_changes(
    project: SmallProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = project
    p.sql(
        f"INSERT INTO {SCHEMA}.custs VALUES (1, 10, 'a'), (2, 10, 'b'), (3, 20, 'c'), "
        "(4, NULL, 'd'), (5, 30, 'zz'), (NULL, 10, 'n')"
    )
    p.sql(
        f"INSERT INTO {SCHEMA}.ords VALUES (100, 1, 'O'), (101, 1, 'F'), (102, 2, 'O'), "
        "(103, 3, 'O'), (104, 4, NULL), (105, 5, 'O'), (106, NULL, 'O'), (107, 9, 'O'), "
        "(110, 2, 'X')"
    )
    p.sql(
        f"INSERT INTO {SCHEMA}.lines VALUES (100, 10.00, 1), (100, 20.00, 2), (100, 20.00, 2), "
        "(101, 5.50, NULL), (102, 99.99, 3), (102, 1.00, 4), (103, NULL, 5), (104, 7.00, 6), "
        "(104, 8.00, 7), (105, 60.00, 8), (106, 70.00, 9), (107, 80.00, 1), (NULL, 1.00, 1)"
    )
    p.sql(f"INSERT INTO {SCHEMA}.tags VALUES (2, 'two')")
    message = _check(p, "build")
    assert "built" in message, message
    auto = run_messages(p, "-s", AUTO)[AUTO]
    assert "aux state" in auto, auto  # chosen at the build, kept while the SQL stays

    p.sql(f"UPDATE {SCHEMA}.tags SET qty = 1 WHERE qty = 2")
    _check(p, "the auto model's dimension changed")

    # A dimension change only: customer 2 moves nation, 4 gets one, 5 leaves 'zz' (its
    # orders enter the model), 3 is deleted, 9 appears (its order 107 starts to match).
    p.sql(f"UPDATE {SCHEMA}.custs SET nation = 20 WHERE cid = 2")
    p.sql(f"UPDATE {SCHEMA}.custs SET nation = 30 WHERE cid = 4")
    p.sql(f"UPDATE {SCHEMA}.custs SET name = 'e' WHERE cid = 5")
    p.sql(f"DELETE FROM {SCHEMA}.custs WHERE cid = 3")
    p.sql(f"INSERT INTO {SCHEMA}.custs VALUES (9, 10, 'i')")
    _check(p, "dimension changes")

    # Fact changes only: an order changes status and another customer; lines come and go,
    # the group's maximum among them.
    p.sql(f"UPDATE {SCHEMA}.ords SET status = 'F' WHERE ok = 100")
    p.sql(f"UPDATE {SCHEMA}.ords SET cust = 2 WHERE ok = 107")
    p.sql(f"UPDATE {SCHEMA}.ords SET status = 'X' WHERE ok = 102")  # leaves the LEFT join's ON
    p.sql(f"DELETE FROM {SCHEMA}.lines WHERE price = 99.99 OR ok = 104")
    p.sql(f"INSERT INTO {SCHEMA}.lines VALUES (101, 55.00, 2), (106, 1.00, NULL), (107, NULL, 3)")
    _check(p, "fact changes")

    # Both in one refresh, and a customer and its orders removed together.
    p.sql(f"UPDATE {SCHEMA}.custs SET nation = NULL WHERE cid = 1")
    p.sql(f"DELETE FROM {SCHEMA}.custs WHERE cid = 9")
    p.sql(f"DELETE FROM {SCHEMA}.ords WHERE cust = 2")
    p.sql(f"INSERT INTO {SCHEMA}.ords VALUES (108, 4, 'P'), (109, 1, 'P')")
    p.sql(f"INSERT INTO {SCHEMA}.lines VALUES (108, 3.00, 1), (108, 4.00, 2), (109, 9.00, 9)")
    _check(p, "dimension and fact changes")

    # A failure right after A's commit: the model keeps its old state and watermark of A's
    # state table; the next run reads A's change from there.
    p.sql(f"INSERT INTO {SCHEMA}.lines VALUES (108, 100.00, 1), (100, 2.00, 2)")
    p.sql(f"UPDATE {SCHEMA}.custs SET nation = 10 WHERE cid = 4")
    monkeypatch.setenv("DBT_SPARK_IVM_FAIL_AFTER", "commit")
    result = p.dbt("run", "-s", MODEL)
    assert not result.success, "the injected failure did not stop the run"
    monkeypatch.delenv("DBT_SPARK_IVM_FAIL_AFTER")
    _check(p, "after a failure between the two commits")


UNGROUPED = "aux_ungrouped"
UNGROUPED_SELECT = f"""select count(*) as n, count(l.qty) as n_qty, sum(l.qty) as qty,
       max(l.price) as max_price
from {SCHEMA}.lines l join {SCHEMA}.ords o on l.ok = o.ok join {SCHEMA}.custs c on o.cust = c.cid
where c.nation = 999"""


def test_aux_state_of_an_ungrouped_aggregate(project: SmallProject) -> None:
    """One row always: over no rows its counts are 0 (not the NULL sum of no partial
    counts), its sum and max NULL."""
    p = project
    _model(p, UNGROUPED, UNGROUPED_SELECT, "always")
    for context, change in (
        ("built over no rows", None),
        ("a customer enters", f"UPDATE {SCHEMA}.custs SET nation = 999 WHERE cid = 1"),
        ("its lines change", f"INSERT INTO {SCHEMA}.lines VALUES (109, 2.00, NULL)"),
        ("it leaves again", f"UPDATE {SCHEMA}.custs SET nation = 1 WHERE cid = 1"),
    ):
        if change is not None:
            p.sql(change)
        message = run_messages(p, "-s", UNGROUPED)[UNGROUPED]
        assert "aux state" in message, f"{context}: {message}"
        assert_equal_to_sql(p, f"{SCHEMA}.{UNGROUPED}", UNGROUPED_SELECT, context)


def test_aux_state_switched_off_and_on(project: SmallProject) -> None:
    p = project
    aux_view = Target(SCHEMA, MODEL).auxiliary.view
    _model(p, MODEL, SELECT, "never")
    p.sql(f"INSERT INTO {SCHEMA}.lines VALUES (100, 12.00, 2)")
    message = _check(p, "switched off", aux=False)
    assert "it no longer keeps an auxiliary state" in message, message
    assert not p.sql(f"SHOW TABLES IN {SCHEMA} LIKE '{aux_view.split('.')[1]}*'"), "A left behind"

    _model(p, MODEL, SELECT, "always")
    p.sql(f"UPDATE {SCHEMA}.custs SET nation = 40 WHERE cid = 1")
    message = _check(p, "switched on")
    assert "it now keeps an auxiliary state" in message, message
    p.sql(f"DELETE FROM {SCHEMA}.lines WHERE qty = 2")
    _check(p, "refreshed again")


class _Statements:
    """The runtime's reads over the project's connection, statements only (thrift's way)."""

    def __init__(self, p: SmallProject) -> None:
        self.p = p

    def fetch(self, statement: str) -> list[tuple]:
        return self.p.sql(statement)


class _Driver(_Statements):
    """A `MetadataReader` that answers the snapshot summary from the driver, as the session
    method's executor does, and nothing else (its other reads return None: not known)."""

    def iceberg_snapshot_totals(self, relation: str) -> tuple[int, dict[str, str]] | None:
        from pyspark.sql import SparkSession

        return session_metadata.snapshot_totals(SparkSession.builder.getOrCreate(), relation)

    def __getattr__(self, name: str) -> Any:
        if name.startswith(("iceberg_", "view_")):
            return lambda *args: None
        raise AttributeError(name)


def test_auto_sizes_tables_by_their_current_snapshot(project: SmallProject) -> None:
    """`ivm_aux_states='auto'` weighs the tables by the rows of their current snapshots:
    after a rollback, not the snapshot committed last, read either way."""
    p = project
    sized = f"{SCHEMA}.sized"
    p.sql(f"DROP TABLE IF EXISTS {sized}")
    p.sql(f"CREATE TABLE {sized} (x int) USING iceberg")
    p.sql(f"INSERT INTO {sized} VALUES (1), (2), (NULL)")
    (first,) = p.sql(f"SELECT snapshot_id FROM {sized}.snapshots")[0]
    p.sql(f"INSERT INTO {sized} VALUES (4), (4)")
    p.sql(f"CALL spark_catalog.system.rollback_to_snapshot('{sized}', {first})")
    assert p.sql(f"SELECT COUNT(*) FROM {sized}") == [(3,)]
    timings: list[tuple[str, float]] = []
    statements = aux_choice.snapshot_rows(_Statements(p), [sized, f"{SCHEMA}.lines"], timings)
    assert isinstance(_Driver(p), MetadataReader)
    driver = aux_choice.snapshot_rows(_Driver(p), [sized, f"{SCHEMA}.lines"], timings)
    lines = p.sql(f"SELECT COUNT(*) FROM {SCHEMA}.lines")[0][0]
    assert statements == driver == {sized: 3, f"{SCHEMA}.lines": lines}, (statements, driver)
    assert [name for name, _ in timings] == ["sizes", "sizes"]
