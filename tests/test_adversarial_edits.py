"""Edited models and damaged state (issue 10, class 6): a model whose SQL changes between
runs rebuilds by itself, and `--full-refresh` repairs whatever it finds: a state table with
another schema, a metadata row edited or deleted by hand, a state table dropped or altered.
After each step the relation equals a fresh run of its SQL, and so it does after a further
ordinary change.
"""

from __future__ import annotations

import pytest
from adversarial import assert_equal_to_sql, run_messages
from small_project import SmallProject

SCHEMA = "ivm_adv_edits"
BASE = f"{SCHEMA}.t"
STATE = f"{SCHEMA}.m__ivm_state"
VERSIONS = [
    ("first", f"select k, sum(x) as s from {BASE} group by k"),
    ("group key added", f"select k, u, sum(x) as s from {BASE} group by k, u"),
    ("sum to avg", f"select k, u, avg(x) as s from {BASE} group by k, u"),
    ("column removed", f"select k, avg(x) as s from {BASE} group by k"),
    ("plain select", f"select k, x, u from {BASE}"),
    ("distinct", f"select distinct k, u from {BASE}"),
    ("back to the first", f"select k, sum(x) as s from {BASE} group by k"),
]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> SmallProject:
    p = SmallProject(tmp_path_factory.mktemp("adv_edits"), "adv_edits", SCHEMA)
    p.model("m", VERSIONS[0][1])
    assert p.dbt("debug").success
    p.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    p.sql(f"DROP TABLE IF EXISTS {BASE}")
    p.sql(f"CREATE TABLE {BASE} (k string, x int, u string) USING iceberg")
    p.sql(f"INSERT INTO {BASE} VALUES ('a', 1, 'p'), ('a', 2, NULL), (NULL, 3, 'q'), ('b', 4, 'p')")
    return p


def _change(p: SmallProject, step: int) -> None:
    p.sql(f"INSERT INTO {BASE} VALUES ('c', {step}, 'r'), (NULL, NULL, NULL)")
    p.sql(f"UPDATE {BASE} SET x = x + 10 WHERE k = 'a' AND x < 5")
    p.sql(f"DELETE FROM {BASE} WHERE k = 'b'")


def _run_and_check(p: SmallProject, select: str, expect: str, *args: str) -> None:
    message = run_messages(p, *args)["m"]
    assert expect in message, f"expected {expect!r} in: {message}"
    assert_equal_to_sql(p, f"{SCHEMA}.m", select, message)


def test_edited_model_rebuilds_by_itself_and_refreshes_after(project: SmallProject):
    p = project
    _run_and_check(p, VERSIONS[0][1], "built (first run)")
    for step, (what, select) in enumerate(VERSIONS[1:], start=1):
        p.model("m", select)
        _run_and_check(p, select, "model SQL changed")
        _change(p, step)
        _run_and_check(p, select, "refreshed")


@pytest.mark.parametrize(
    "damage, expect",
    [
        (f"UPDATE {STATE} SET __ivm_meta__ = 'garbage' WHERE __ivm_row__ = 1", "no ivm state"),
        (f"UPDATE {STATE} SET __ivm_meta__ = '{{\"watermarks\": 7}}' WHERE __ivm_row__ = 1",
         "no ivm state"),
        (f"DELETE FROM {STATE} WHERE __ivm_row__ = 1", "no ivm state"),
        (f"DROP TABLE {STATE}", "no ivm state"),
        (f"ALTER TABLE {STATE} DROP COLUMN __ivm_count__", None),
        (f"ALTER VIEW {SCHEMA}.m SET TBLPROPERTIES ('ivm.sql_hash' = 'tampered')", "model SQL changed"),
    ],
)  # fmt: skip
def test_damaged_state_is_rebuilt_or_repaired_by_full_refresh(
    project: SmallProject, damage: str, expect: str | None
):
    p = project
    select = VERSIONS[0][1]
    p.model("m", select)
    run_messages(p)
    p.sql(damage)
    _change(p, 7)
    if expect is not None:  # noticed by the next ordinary run
        _run_and_check(p, select, expect)
    else:  # may fail the ordinary run; --full-refresh must repair it
        p.dbt("run")
    _run_and_check(p, select, "--full-refresh", "--full-refresh")
    _change(p, 8)
    _run_and_check(p, select, "refreshed")
