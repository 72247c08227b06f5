"""Edited models and damaged state (issue 10, class 6): a model whose SQL changes between
runs rebuilds by itself, and `--full-refresh` repairs whatever it finds: a state table with
another schema, a metadata row edited or deleted by hand, a state table dropped or altered.
After each step the relation equals a fresh run of its SQL, and so it does after a further
ordinary change. Each kind of damage has its own model (and state), so one `dbt run` per step
serves all of them.
"""

from __future__ import annotations

import pytest
from support.adversarial import assert_equal_to_sql, bag_difference, run_messages
from support.small_project import SmallProject

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
    p.start_spark()
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


#: (name, damage, the phrase of the next ordinary run's log line or None: that run may fail).
#: `{state}` is the damaged model's state table, `{view}` its view.
DAMAGES = [
    ("meta_garbage", "UPDATE {state} SET __ivm_meta__ = 'garbage' WHERE __ivm_row__ = 1",
     "no ivm state"),
    ("meta_wrong_json",
     "UPDATE {state} SET __ivm_meta__ = '{{\"watermarks\": 7}}' WHERE __ivm_row__ = 1",
     "no ivm state"),
    ("meta_deleted", "DELETE FROM {state} WHERE __ivm_row__ = 1", "no ivm state"),
    ("state_dropped", "DROP TABLE {state}", "no ivm state"),
    ("state_column_dropped", "ALTER TABLE {state} DROP COLUMN __ivm_count__", None),
    ("view_tampered", "ALTER VIEW {view} SET TBLPROPERTIES ('ivm.sql_hash' = 'tampered')",
     "model SQL changed"),
]  # fmt: skip


def _model_results(p: SmallProject, *args: str) -> tuple[bool, dict[str, tuple[str, str]]]:
    """`dbt run` (args appended): overall success and each model's (status, log line)."""
    result = p.dbt("run", *args)
    results = result.result.results if result.result else []
    return bool(result.success), {
        r.node.name: (str(getattr(r.status, "value", r.status)), str(r.message)) for r in results
    }


@pytest.fixture(scope="module")
def damaged(project: SmallProject, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list]:
    """Every damage on its own model (same SQL, same base table) of a second project, so one
    `dbt run` serves all of them: build, damage + change, ordinary run, `--full-refresh`, change,
    ordinary run. Returns each damage's problems (empty: it was noticed or repaired as due)."""
    p = SmallProject(tmp_path_factory.mktemp("adv_edits_damage"), "adv_edits_damage", SCHEMA)
    select = VERSIONS[0][1]
    models = {name: f"damaged_{name}" for name, _, _ in DAMAGES}
    for model in models.values():
        p.model(model, select)
    problems: dict[str, list[str]] = {name: [] for name in models}

    def check(step: str, results: dict[str, tuple[str, str]], expect: dict[str, str]) -> None:
        for name, phrase in expect.items():
            status, message = results.get(models[name], ("no result", ""))
            if status != "success" or phrase not in message:
                problems[name].append(f"{step}: expected {phrase!r}, got {status}: {message}")
                continue
            diff = bag_difference(p, f"{SCHEMA}.{models[name]}", select)
            if diff:
                problems[name].append(f"{step}: differs from its SQL:\n" + "\n".join(diff))

    every = {name: "built" for name in models}
    success, results = _model_results(p)
    check("build", results, every)
    assert success, results
    for name, damage, _ in DAMAGES:
        model = models[name]
        p.sql(damage.format(state=f"{SCHEMA}.{model}__ivm_state", view=f"{SCHEMA}.{model}"))
    _change(p, 7)
    # Noticed by the next ordinary run; the dropped column may fail it (then `--full-refresh`
    # must repair it), which fails the invocation but no other model.
    _, results = _model_results(p)
    check("run after the damage", results, {n: e for n, _, e in DAMAGES if e is not None})
    _, results = _model_results(p, "--full-refresh")
    check("--full-refresh", results, {name: "--full-refresh" for name in models})
    _change(p, 8)
    _, results = _model_results(p)
    check("run after a change", results, {name: "refreshed" for name in models})
    return problems


@pytest.mark.parametrize("name", [name for name, _, _ in DAMAGES])
def test_damaged_state_is_rebuilt_or_repaired_by_full_refresh(
    damaged: dict[str, list[str]], name: str
):
    assert not damaged[name], "\n".join(damaged[name])
