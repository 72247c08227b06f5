"""`dbt run-operation ivm_cleanup`: the companions of models that are no longer ivm models go.

User-visible outcomes: after a model is switched to `table` and run, its state and delta log
are dropped, and said; a model switched but not yet run keeps them (dropping them would break
its view) and the operation says to run it first; a removed model's view, state and
sub-query states go; `dry_run` only lists; the ivm models that remain keep everything and
refresh exactly afterwards; a second cleanup finds nothing.
"""

from __future__ import annotations

import pytest
from support.small_project import SmallProject

SCHEMA = "ivm_cleanup"
AGG_SQL = f"select k, count(*) as n, sum(x) as s from {SCHEMA}.base group by k"
OVER_SQL = "select n, count(*) as c from {{ ref('agg') }} group by n"
STAGED_SQL = (
    f"select k, x from {SCHEMA}.base where k in "
    f"(select k from {SCHEMA}.base group by k having count(*) > 1)"
)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> SmallProject:
    p = SmallProject(tmp_path_factory.mktemp("cleanup"), "cleanup", SCHEMA).started()
    p.base_table("base", "k string, x int", "('a', 1)", "('a', 2)", "('b', 3)", "(NULL, 4)")
    p.model("agg", AGG_SQL)
    p.model("over", OVER_SQL)
    p.model("staged", STAGED_SQL)
    p.run()
    return p


def _relations(p: SmallProject) -> set[str]:
    return {str(r[1]) for r in p.sql(f"SHOW TABLES IN {SCHEMA}") if not r[2]}


def test_cleanup_drops_what_former_ivm_models_left(project: SmallProject) -> None:
    p = project
    before = _relations(p)
    companions = {"agg__ivm_state", "agg__ivm_dlog", "staged__ivm_s0", "staged__ivm_s0__ivm_state"}
    assert companions | {"staged__ivm_state", "over__ivm_state"} <= before, before

    # agg switched to a table but not run yet: its view still reads its state
    (p.root / "models" / "agg.sql").write_text(
        "{{ config(materialized='table', file_format='iceberg') }}\n" + AGG_SQL
    )
    ok, lines = p.operation("ivm_cleanup")
    assert ok, lines
    assert any("agg is an ivm view still; run it first" in line for line in lines), lines
    assert _relations(p) == before

    p.run("--select", "agg", "over")
    (p.root / "models" / "staged.sql").unlink()
    ok, lines = p.operation("ivm_cleanup", "{dry_run: true}")
    assert ok, lines
    assert (
        f"ivm_cleanup: would drop {SCHEMA}.agg__ivm_state (agg is no longer an ivm model)" in lines
    )
    assert before <= _relations(p)  # nothing dropped
    assert "staged" in _relations(p)

    ok, lines = p.operation("ivm_cleanup")
    assert ok, lines
    gone = {
        "agg__ivm_state", "agg__ivm_dlog", "staged", "staged__ivm_state", "staged__ivm_s0",
        "staged__ivm_s0__ivm_state",
    }  # fmt: skip
    left = _relations(p)
    assert not gone & left, left
    assert {"agg", "over", "over__ivm_state"} <= left, left
    for name in sorted(gone):
        assert any(line.startswith(f"ivm_cleanup: dropped {SCHEMA}.{name} (") for line in lines)
    assert any("staged is not a model of this project" in line for line in lines), lines

    # what remains still works
    p.sql(f"INSERT INTO {SCHEMA}.base VALUES ('c', 5), ('a', 6)")
    p.run()
    p.check_models(["over"])
    ok, lines = p.operation("ivm_cleanup")
    assert ok and lines == ["ivm_cleanup: no companion relation of a former ivm model found"], lines
