"""The cases of Oracle's outer-join fast refresh (seeds/oracle-outer-join-mv-fast-refresh-part2),
replayed on `test_outer LEFT JOIN test_inner ON jouter = jinner` with a non-unique inner join
column, so an outer row's 'slice' can hold many inner rows.

Every case has its own table pair and model; all are built by one `dbt run`, changed, and
refreshed by one more. After the refresh each relation must equal a fresh run of its SQL, and
the slice named by the case must look as the seed says.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.small_project import SmallProject

SCHEMA = "ivm_outer_cases"


@dataclass(frozen=True)
class Case:
    name: str
    outer: str  # VALUES rows of (pkouter, jouter, xouter)
    inner: str  # VALUES rows of (pkinner, jinner, xinner)
    change: tuple[str, ...]  # statements; {o} / {i} are the case's tables
    slice_pk: int  # the outer row whose slice the case is about
    slice_after: Counter  # expected (pkinner or None) multiset of that slice after refresh


CASES = [
    Case(  # DEL.upd: the only match of a one-row slice is deleted -> its padded row appears
        "one_row_slice_match_deleted",
        "(1, 10, 'o1'), (2, 20, 'o2')",
        "(100, 10, 'i100'), (200, 20, 'i200')",
        ("DELETE FROM {i} WHERE pkinner = 100",),
        1,
        Counter({None: 1}),
    ),
    Case(  # DEL.del (all marked): every row of the slice goes, one padded row remains
        "all_rows_of_slice_deleted",
        "(1, 10, 'o1')",
        "(100, 10, 'a'), (101, 10, 'b'), (102, 10, 'c'), (300, 30, 'z')",
        ("DELETE FROM {i} WHERE jinner = 10",),
        1,
        Counter({None: 1}),
    ),
    Case(  # DEL.del (some marked): the marked rows go, the others stay, no padded row
        "some_rows_of_slice_deleted",
        "(1, 10, 'o1')",
        "(100, 10, 'a'), (101, 10, 'b'), (102, 10, 'c')",
        ("DELETE FROM {i} WHERE pkinner IN (100, 101)",),
        1,
        Counter({102: 1}),
    ),
    Case(  # INS.ins + INS.del: inserts into a slice that had only its padded row
        "insert_into_padded_slice",
        "(1, 10, 'o1'), (2, 20, 'o2')",
        "(200, 20, 'i200')",
        ("INSERT INTO {i} VALUES (100, 10, 'new1'), (101, 10, 'new2')",),
        1,
        Counter({100: 1, 101: 1}),
    ),
    Case(  # NULL join key on the outer side: never matches, keeps its padded row throughout
        "null_outer_key",
        "(1, NULL, 'o1'), (2, 20, 'o2')",
        "(100, NULL, 'inull'), (200, 20, 'i200')",
        (
            "INSERT INTO {i} VALUES (101, NULL, 'another null')",
            "UPDATE {o} SET xouter = 'x' WHERE pkouter = 1",
        ),
        1,
        Counter({None: 1}),
    ),
    Case(  # NULL join key on the inner side: an inner row moved to NULL leaves its slice
        "inner_key_set_null",
        "(1, 10, 'o1')",
        "(100, 10, 'i100')",
        ("UPDATE {i} SET jinner = NULL WHERE pkinner = 100",),
        1,
        Counter({None: 1}),
    ),
    Case(  # an update moves an inner row from slice 10 (its only match) to slice 20 (padded)
        "update_moves_inner_row_between_slices",
        "(1, 10, 'o1'), (2, 20, 'o2'), (3, 20, 'o3')",
        "(100, 10, 'i100'), (101, 10, 'i101')",
        ("UPDATE {i} SET jinner = 20 WHERE pkinner = 100",),
        2,
        Counter({100: 1}),
    ),
    Case(  # both sides in one refresh: outer row added to a slice, inner rows added and deleted
        "both_sides_changed",
        "(1, 10, 'o1')",
        "(100, 10, 'a'), (200, 20, 'b')",
        (
            "INSERT INTO {o} VALUES (2, 20, 'o2'), (3, 30, 'o3'), (1, 10, 'o1 twin')",
            "DELETE FROM {i} WHERE pkinner = 100",
            "INSERT INTO {i} VALUES (300, 30, 'c')",
        ),
        1,
        Counter({None: 2}),
    ),
]


def _sql(case: Case) -> str:
    o, i = _tables(case)
    return (
        "select o.pkouter, o.jouter, o.xouter, i.pkinner, i.jinner, i.xinner "
        f"from {o} o left join {i} i on o.jouter = i.jinner"
    )


def _tables(case: Case) -> tuple[str, str]:
    return f"{SCHEMA}.{case.name}_outer", f"{SCHEMA}.{case.name}_inner"


def build_and_refresh(root: Path, target: str | None = None) -> SmallProject:
    """Every case's tables and model, one build, the cases' changes, one refresh; on `target`
    (default `IVM_TEST_TARGET`; `test_thrift_cluster.py` runs the same through thrift)."""
    r = SmallProject(root, "outer_cases", SCHEMA, target=target)
    for case in CASES:
        r.model(case.name, _sql(case))
    debug = r.dbt("debug")
    assert debug.success, debug.exception
    r.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    for case in CASES:
        o, i = _tables(case)
        for name, ddl, rows in (
            (o, "pkouter int, jouter int, xouter string", case.outer),
            (i, "pkinner int, jinner int, xinner string", case.inner),
        ):
            r.sql(f"DROP TABLE IF EXISTS {name}")
            r.sql(f"CREATE TABLE {name} ({ddl}) USING iceberg")
            r.sql(f"INSERT INTO {name} VALUES {rows}")
    build = r.dbt("run")
    assert build.success, build.exception
    for case in CASES:
        o, i = _tables(case)
        for statement in case.change:
            r.sql(statement.format(o=o, i=i))
    refresh = r.dbt("run")
    assert refresh.success, refresh.exception
    r.messages = {res.node.name: str(res.message) for res in refresh.result.results}
    return r


def check_case(case: Case, r: SmallProject) -> None:
    """The case's model refreshed, equals a fresh run of its SQL, and its slice is as expected."""
    assert r.messages[case.name].startswith("refreshed"), r.messages[case.name]
    relation = r.bag(f"SELECT * FROM {SCHEMA}.{case.name}")
    expected = r.bag(_sql(case))
    assert relation == expected, f"missing {expected - relation}, extra {relation - expected}"
    slice_rows = Counter(row[3] for row in relation.elements() if row[0] == case.slice_pk)
    assert slice_rows == case.slice_after, slice_rows


@pytest.fixture(scope="module")
def refreshed(tmp_path_factory: pytest.TempPathFactory) -> SmallProject:
    return build_and_refresh(tmp_path_factory.mktemp("outer_cases"))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_outer_join_case(case: Case, refreshed: SmallProject) -> None:
    check_case(case, refreshed)
