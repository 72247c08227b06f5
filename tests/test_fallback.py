"""`ivm_unsupported='rebuild'`: a model the compiler refuses is rebuilt in full every run.

The user-visible outcomes: the run succeeds and its message names the refused construct; the
relation equals its SQL after every base change; `dbt test` with `ivm_consistent` passes on
it; a model that becomes maintainable (or stops being so) switches between a maintained view
and a rebuilt table, leaving no stale state behind; the default stays the precise error.
"""

from __future__ import annotations

import json

import pytest
from support.small_project import SmallProject

SCHEMA = "ivm_fallback"
# A generator (LATERAL VIEW explode) is refused: no rule maintains it.
GENERATOR_SQL = f"select k, x, e from {SCHEMA}.base lateral view explode(array(x, x * 2)) t as e"
PLAIN_SQL = f"select k, count(*) as n, sum(x) as s from {SCHEMA}.base group by k"
REBUILD = "{{ config(materialized='ivm', ivm_unsupported='rebuild') }}\n"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> SmallProject:
    p = SmallProject(tmp_path_factory.mktemp("fallback"), "fallback", SCHEMA).started()
    rows = ("('a', 1)", "('a', 2)", "('b', 3)", "(NULL, 4)", "('a', 2)")
    p.base_table("base", "k string, x int", *rows)
    tests = {
        "version": 2,
        "models": [{"name": m, "data_tests": ["ivm_consistent"]} for m in ("ranked",)],
    }
    (p.root / "models" / "consistency.yml").write_text(json.dumps(tests))
    return p


def _write(p: SmallProject, name: str, header: str, select: str) -> None:
    (p.root / "models" / f"{name}.sql").write_text(header + select)


def _run(p: SmallProject, model: str) -> str:
    result = p.dbt("run", "--select", model)
    message = " ".join(str(r.message) for r in result.result.results) if result.result else ""
    assert result.success, f"dbt run {model} failed: {message} {result.exception}"
    return message


def _tables(p: SmallProject) -> dict[str, bool]:
    """Relations of the schema: name -> is it a view (SHOW VIEWS lists the views)."""
    views = {r[1] for r in p.sql(f"SHOW VIEWS IN {SCHEMA}")}
    return {r[1]: r[1] in views for r in p.sql(f"SHOW TABLES IN {SCHEMA}")}


def _equal(p: SmallProject, relation: str, select: str) -> None:
    assert p.bag(f"SELECT * FROM {SCHEMA}.{relation}") == p.bag(select), relation


def test_a_generator_model_is_rebuilt_each_run_and_switches_with_its_sql(project: SmallProject):
    p = project
    _write(p, "ranked", REBUILD, GENERATOR_SQL)
    message = _run(p, "ranked")
    assert "rebuilt in full" in message and "LATERAL VIEW" in message, message
    assert _tables(p).get("ranked") is False, _tables(p)  # a table, not a view
    _equal(p, "ranked", GENERATOR_SQL)

    p.sql(f"INSERT INTO {SCHEMA}.base VALUES ('b', 0), ('c', NULL), ('a', 2)")
    p.sql(f"DELETE FROM {SCHEMA}.base WHERE x = 1")
    _run(p, "ranked")
    _equal(p, "ranked", GENERATOR_SQL)
    result = p.dbt("test", "--select", "ranked")
    assert result.success, [str(r.message) for r in result.result.results]

    # The SQL becomes maintainable: the model is built as a maintained view, then refreshed.
    _write(p, "ranked", REBUILD, PLAIN_SQL)
    message = _run(p, "ranked")
    assert "full build" in message or "built" in message, message
    assert _tables(p).get("ranked") is True and "ranked__ivm_state" in _tables(p), _tables(p)
    p.sql(f"UPDATE {SCHEMA}.base SET x = x + 10 WHERE k = 'a'")
    message = _run(p, "ranked")
    assert "rebuilt" not in message and "built" not in message, message
    _equal(p, "ranked", PLAIN_SQL)

    # And back: the view and its state make way for the rebuilt table.
    _write(p, "ranked", REBUILD, GENERATOR_SQL)
    message = _run(p, "ranked")
    assert "LATERAL VIEW" in message, message
    relations = _tables(p)
    assert relations.get("ranked") is False, relations
    assert not [t for t in relations if t.startswith("ranked__")], relations
    _equal(p, "ranked", GENERATOR_SQL)


def test_an_unknown_setting_is_an_error_naming_it(project: SmallProject):
    p = project
    _write(
        p, "bad_setting", "{{ config(materialized='ivm', ivm_unsupported='skip') }}\n", PLAIN_SQL
    )
    result = p.dbt("run", "--select", "bad_setting")
    assert not result.success
    message = " ".join(str(r.message) for r in result.result.results)
    assert "ivm_unsupported = 'skip' is not one of error, rebuild" in message, message


def test_a_versioned_model_is_named_with_its_version(project: SmallProject):
    """Messages name a versioned model `name.vN` (not `vN`); an unknown `ivm_refresh` is an
    error naming it and the values it takes."""
    p = project
    versions = {"version": 2, "models": [{"name": "priced", "versions": [{"v": 2}]}]}
    (p.root / "models" / "priced.yml").write_text(json.dumps(versions))
    _write(p, "priced_v2", "{{ config(materialized='ivm', ivm_refresh='sometimes') }}\n", PLAIN_SQL)
    try:
        result = p.dbt("run", "--select", "priced")
        assert not result.success
        message = " ".join(str(r.message) for r in result.result.results)
        assert (
            "ivm model 'priced.v2': ivm_refresh = 'sometimes' is not one of auto, incremental, full"
            in message
        ), message
    finally:
        (p.root / "models" / "priced.yml").unlink()
        (p.root / "models" / "priced_v2.sql").unlink()
