"""A producer commits to a base table while a refresh runs: the refresh applies what it pinned,
and the next refresh applies the producer's commit; nothing is lost or applied twice (issue 39,
item 4).

The refresh is held after a step by `DBT_SPARK_IVM_PAUSE_AFTER` (`runtime/failpoints.py`):
after `logs` (its watermarks pinned and its change logs read) and after `recompute` (its delta
computed, its MERGE next). While it waits, the producer inserts, updates and deletes rows of
both base tables, some of them rows the refresh's change touched. The paused run then ends;
the relation must equal the model's SQL over the tables as they were when the run started,
and after one more run, over the tables as they are now. Session and thrift targets alike.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from support.small_project import SmallProject

from dbt.adapters.spark_ivm.compiler.runtime.failpoints import PAUSE_ENV

SCHEMA = "ivm_producer"
MODELS = {
    "agg": (
        "select f.k, d.label, count(*) as n, sum(f.x) as s, min(f.x) as mn "
        f"from {SCHEMA}.facts f join {SCHEMA}.dims d on f.k = d.k group by f.k, d.label"
    ),
    "lj": f"select d.k, d.label, f.x from {SCHEMA}.dims d left join {SCHEMA}.facts f on f.k = d.k",
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> SmallProject:
    p = SmallProject(tmp_path_factory.mktemp("producer"), "producer", SCHEMA).started()
    for name, select in MODELS.items():
        p.model(name, select)
    facts = ["(1, 'a', 1)", "(2, 'a', 2)", "(3, 'b', 3)", "(4, NULL, 4)", "(5, 'c', NULL)"]
    p.base_table("facts", "id int, k string, x int", *facts, "(6, 'b', 3)")
    p.base_table(
        "dims", "k string, label string", "('a', 'x')", "('b', 'y')", "('c', NULL)", "('d', 'z')"
    )
    assert p.dbt("run").success
    return p


def _bags(p: SmallProject) -> dict[str, Counter]:
    return {name: p.bag(select) for name, select in MODELS.items()}


def _relations(p: SmallProject) -> dict[str, Counter]:
    return {name: p.bag(f"SELECT * FROM {SCHEMA}.{name}") for name in MODELS}


@pytest.mark.parametrize("step", ["logs", "recompute"])
def test_a_commit_during_a_refresh_is_applied_by_the_next_one(
    project: SmallProject, step: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = project
    base = 100 if step == "logs" else 200
    # The change the paused run reads ...
    p.sql(f"INSERT INTO {SCHEMA}.facts VALUES ({base}, 'a', 9), ({base + 1}, 'd', 5)")
    p.sql(f"DELETE FROM {SCHEMA}.facts WHERE id = 2 OR id = {base - 99}")
    p.sql(f"UPDATE {SCHEMA}.dims SET label = 'w' WHERE k = 'b'")
    as_read = _bags(p)
    resume = tmp_path / "resume"
    monkeypatch.setenv(PAUSE_ENV, f"{step}:{resume}")
    ran: dict[str, object] = {}
    run = threading.Thread(target=lambda: ran.update(result=p.dbt("run")), daemon=True)
    run.start()
    deadline = time.monotonic() + 300
    # Every model pinned its watermarks and waits (they refresh on threads of their own).
    while not all(Path(f"{resume}.{name}.paused").exists() for name in MODELS):
        assert run.is_alive(), f"the run ended before its pause: {ran}"
        assert time.monotonic() < deadline, "the run never paused"
        time.sleep(0.2)
    # ... and the producer's commits while it waits: rows it touched among them.
    p.sql(f"INSERT INTO {SCHEMA}.facts VALUES ({base + 2}, 'b', 7), ({base + 3}, NULL, 1)")
    p.sql(f"UPDATE {SCHEMA}.facts SET x = x + 10 WHERE id = {base} OR k = 'c'")
    p.sql(f"DELETE FROM {SCHEMA}.facts WHERE id = 3")
    p.sql(f"INSERT INTO {SCHEMA}.dims VALUES ('e', 'v')")
    p.sql(f"DELETE FROM {SCHEMA}.dims WHERE k = 'd'")
    monkeypatch.delenv(PAUSE_ENV)
    resume.write_text("go")
    run.join(timeout=600)
    assert not run.is_alive(), "the paused run did not end"
    result = ran["result"]
    assert result.success, result  # type: ignore[attr-defined]
    # It applied what it pinned, not the producer's commits ...
    assert _relations(p) == as_read
    assert as_read != _bags(p)
    # ... which the next run applies.
    assert p.dbt("run").success
    assert _relations(p) == _bags(p)
