"""dbt's `persist_docs` and `grants` configs on ivm models.

The user-visible outcomes: with `persist_docs: {relation: true, columns: true}` the model's
view carries the model's description as its comment and the column descriptions as its
columns' comments (the state's hidden `__ivm_*` columns never show); a description changed in
the schema file reaches the view on the next run, which refreshes (no rebuild): a model
comment alone is altered in place (or removed), column comments re-create the view with its
text and `ivm.*` properties as they were and the state untouched; a run with nothing new
changes nothing; the relation stays equal to its SQL throughout. A model with `grants` on a Spark
without a GRANT statement (the embedded one) fails with an error naming the model and the
config, before anything is built.
"""

from __future__ import annotations

import json

import pytest
from small_project import SmallProject

SCHEMA = "ivm_configs"
AGG_SQL = f"select k, count(*) as n, sum(x) as s from {SCHEMA}.base group by k"
DOCUMENTED = (
    "{{ config(materialized='ivm', persist_docs={'relation': true, 'columns': true}) }}\n" + AGG_SQL
)


def _schema_yml(p: SmallProject, description: str, columns: dict[str, str]) -> None:
    """The project's schema file: `documented` with its docs (JSON is YAML) and the
    `ivm_consistent` test."""
    model = {
        "name": "documented",
        "description": description,
        "columns": [{"name": n, "description": d} for n, d in columns.items()],
        "data_tests": ["ivm_consistent"],
    }
    (p.root / "models" / "schema.yml").write_text(json.dumps({"version": 2, "models": [model]}))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> SmallProject:
    p = SmallProject(tmp_path_factory.mktemp("configs"), "configs", SCHEMA).started()
    p.base_table("base", "k string, x int", "('a', 1)", "('a', 2)", "('b', 3)", "(NULL, 4)")
    return p


def _described(p: SmallProject, relation: str) -> tuple[list[tuple[str, str | None]], str | None]:
    """The relation's columns with their comments and its comment, as `DESCRIBE TABLE
    EXTENDED` shows them."""
    rows = p.sql(f"DESCRIBE TABLE EXTENDED {SCHEMA}.{relation}")
    columns: list[tuple[str, str | None]] = []
    for row in rows:
        if not row[0] or str(row[0]).startswith("#"):
            break
        columns.append((str(row[0]), row[2] or None))
    comment = next((str(r[1]) for r in rows if r[0] == "Comment"), None)
    return columns, comment or None


def _properties(p: SmallProject, relation: str) -> dict[str, str]:
    return {str(k): str(v) for k, v in p.sql(f"SHOW TBLPROPERTIES {SCHEMA}.{relation}")}


def _ivm_properties(p: SmallProject) -> dict[str, str]:
    return {k: v for k, v in _properties(p, "documented").items() if k.startswith("ivm.")}


def _view_text(p: SmallProject) -> str:
    rows = p.sql(f"DESCRIBE TABLE EXTENDED {SCHEMA}.documented")
    return next(str(r[1]) for r in rows if r[0] == "View Text")


def _equal(p: SmallProject) -> None:
    assert p.bag(f"SELECT * FROM {SCHEMA}.documented") == p.bag(AGG_SQL)


def _state_snapshots(p: SmallProject) -> int:
    return int(p.sql(f"SELECT count(*) FROM {SCHEMA}.documented__ivm_state.snapshots")[0][0])


def test_persist_docs_reach_the_view_and_follow_the_schema_file(project: SmallProject):
    p = project
    (p.root / "models" / "documented.sql").write_text(DOCUMENTED)
    # `ghost` is documented but not a column: ignored, as dbt-spark's persist_docs does.
    _schema_yml(p, "Rows per key", {"k": "the key's value", "n": "rows of k", "ghost": "none"})
    built = p.run("--select", "documented")
    assert built["documented"].startswith("built"), built
    columns, comment = _described(p, "documented")
    assert columns == [("k", "the key's value"), ("n", "rows of k"), ("s", None)]
    assert comment == "Rows per key"
    _equal(p)

    # A new model description and a base change: the run refreshes, the comment follows.
    properties, text = _ivm_properties(p), _view_text(p)
    p.sql(f"INSERT INTO {SCHEMA}.base VALUES ('b', 5), ('c', 6)")
    _schema_yml(p, "Rows per key, refreshed", {"k": "the key's value", "n": "rows of k"})
    refreshed = p.run("--select", "documented")
    assert refreshed["documented"].startswith("refreshed"), refreshed
    columns, comment = _described(p, "documented")
    assert comment == "Rows per key, refreshed"
    assert columns == [("k", "the key's value"), ("n", "rows of k"), ("s", None)]
    assert _ivm_properties(p) == properties and _view_text(p) == text
    _equal(p)

    # New column descriptions, no base change: the view is re-created as it was, with the
    # new comments; the state is not written.
    snapshots = _state_snapshots(p)
    _schema_yml(p, "Rows per key, refreshed", {"n": "how many rows", "s": "sum of x"})
    again = p.run("--select", "documented")
    assert again["documented"].startswith("no MERGE"), again
    columns, comment = _described(p, "documented")
    assert columns == [("k", None), ("n", "how many rows"), ("s", "sum of x")]
    assert comment == "Rows per key, refreshed"
    assert _ivm_properties(p) == properties and _view_text(p) == text
    assert _state_snapshots(p) == snapshots

    # The description emptied: the view's comment goes, the rest stays.
    _schema_yml(p, "", {"n": "how many rows", "s": "sum of x"})
    assert p.run("--select", "documented")["documented"].startswith("no MERGE")
    assert _described(p, "documented") == (columns, None)
    assert _ivm_properties(p) == properties and _view_text(p) == text

    # Nothing new: the view is not touched (its metadata file stays the same); the relation
    # is its SQL and its `ivm_consistent` test passes.
    location = _properties(p, "documented")["metadata_location"]
    quiet = p.run("--select", "documented")
    assert quiet["documented"].startswith("no MERGE"), quiet
    assert _properties(p, "documented")["metadata_location"] == location
    p.check_models(["documented"])


def test_grants_fail_the_model_before_anything_is_built(project: SmallProject):
    p = project
    (p.root / "models" / "granted.sql").write_text(
        "{{ config(materialized='ivm', grants={'select': ['some_user']}) }}\n" + AGG_SQL
    )
    result = p.dbt("run", "--select", "granted")
    assert not result.success
    message = " ".join(str(r.message) for r in result.result.results)
    assert "ivm model 'granted': its grants {'select': ['some_user']} cannot be applied" in message
    assert "this Spark has no GRANT statement" in message, message
    tables = {str(r[1]) for r in p.sql(f"SHOW TABLES IN {SCHEMA}")}
    assert not {"granted", "granted__ivm_state"} & tables, tables
    (p.root / "models" / "granted.sql").unlink()
