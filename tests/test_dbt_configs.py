"""dbt's `persist_docs`, `grants`, `contract`, `--empty` and table configs on ivm models.

The user-visible outcomes: with `persist_docs: {relation: true, columns: true}` the model's
view carries the model's description as its comment and the column descriptions as its
columns' comments (the state's hidden `__ivm_*` columns never show); a description changed in
the schema file reaches the view on the next run, which refreshes (no rebuild): a model
comment alone is altered in place (or removed), column comments re-create the view with its
text and `ivm.*` properties as they were and the state untouched; a run with nothing new
changes nothing; the relation stays equal to its SQL throughout. A model with `grants` on a Spark
without a GRANT statement (the embedded one) fails with an error naming the model and the
config, before anything is built.

An enforced `contract` whose types match builds the model and warns of each constraint no
view enforces (one silenced by `warn_unenforced: false` is not); a declared type the SQL does
not have fails the run with dbt's contract error and leaves the model as it was. Under
`--empty` a new model gets its columns and no rows and no state, an existing one is left as
it is (not emptied), a refused construct fails as in a real run, and the next real run builds
and refreshes exactly. `tblproperties`, `partition_by` and `location_root` reach the state
table, which refreshes exactly; a `partition_by` of a column the state does not hold fails
naming the ones it does.
"""

from __future__ import annotations

import json

import pytest
from support.small_project import DbtRun, SmallProject

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


def _yml(p: SmallProject, name: str, models: list[dict], sources: list[dict] | None = None) -> None:
    """A schema file of its own for one test's models (JSON is YAML)."""
    body: dict = {"version": 2, "models": models}
    if sources:
        body["sources"] = sources
    (p.root / "models" / f"{name}.yml").write_text(json.dumps(body))


def _columns(p: SmallProject, relation: str) -> list[str]:
    return [str(r[0]) for r in p.sql(f"DESCRIBE TABLE {SCHEMA}.{relation}") if r[0]]


def _tables(p: SmallProject) -> set[str]:
    return {str(r[1]) for r in p.sql(f"SHOW TABLES IN {SCHEMA}")}


def test_contract_checks_types_and_warns_of_constraints(project: SmallProject):
    p = project
    (p.root / "models" / "contracted.sql").write_text(
        "{{ config(materialized='ivm', contract={'enforced': true}) }}\n" + AGG_SQL
    )

    def declare(s_type: str) -> None:
        columns = [
            {"name": "k", "data_type": "string", "constraints": [{"type": "not_null"}]},
            {"name": "n", "data_type": "bigint"},
            {"name": "s", "data_type": s_type},
        ]
        silenced = {"type": "primary_key", "columns": ["k"], "warn_unenforced": False}
        _yml(p, "contracted", [{"name": "contracted", "columns": columns,
                                "constraints": [silenced]}])  # fmt: skip

    declare("bigint")
    run = DbtRun(p, "--select", "contracted")
    assert run.success, run.messages
    assert run.messages["contracted"].startswith("built"), run.messages
    warned = [w for w in run.warnings if "ivm model 'contracted'" in w]
    assert len(warned) == 1, run.warnings
    assert "contract's not_null constraint on k is not enforced" in warned[0], warned
    p.check_models(["contracted"])

    # A declared type the SQL does not have: dbt's contract error, the model untouched.
    snapshots = int(p.sql(f"SELECT count(*) FROM {SCHEMA}.contracted__ivm_state.snapshots")[0][0])
    p.sql(f"INSERT INTO {SCHEMA}.base VALUES ('d', 7)")
    declare("string")
    failed = DbtRun(p, "--select", "contracted")
    assert not failed.success
    assert "contract" in failed.messages["contracted"].lower(), failed.messages
    assert "s" in failed.messages["contracted"], failed.messages
    after = int(p.sql(f"SELECT count(*) FROM {SCHEMA}.contracted__ivm_state.snapshots")[0][0])
    assert after == snapshots

    # Declared right again: the waiting change is refreshed in.
    declare("bigint")
    assert p.run("--select", "contracted")["contracted"].startswith("refreshed")
    p.check_models(["contracted"])


EMPTIED_SQL = "select k, count(*) as n, sum(x) as s from {{ source('raw', 'base') }} group by k"


def test_empty_builds_the_shape_and_keeps_an_existing_state(project: SmallProject):
    p = project
    (p.root / "models" / "emptied.sql").write_text(
        "{{ config(materialized='ivm') }}\n" + EMPTIED_SQL
    )
    (p.root / "models" / "over_emptied.sql").write_text(
        "{{ config(materialized='ivm') }}\nselect k, n from {{ ref('emptied') }} where n > 1"
    )
    models = ["emptied", "over_emptied"]

    # New models under `dbt build --empty`: their columns, no rows, no state; the model over
    # the other is checked against it too; their ivm_consistent tests compare no rows.
    _yml(
        p,
        "emptied",
        [{"name": m, "data_tests": ["ivm_consistent"]} for m in models],
        [{"name": "raw", "schema": SCHEMA, "tables": [{"name": "base"}]}],
    )
    run = DbtRun(p, "--select", *models, "--empty", command="build")
    assert run.success, run.messages
    assert {m: run.responses[m]["mode"] for m in models} == dict.fromkeys(models, "empty")
    assert _columns(p, "emptied") == ["k", "n", "s"]
    assert p.sql(f"SELECT * FROM {SCHEMA}.emptied") == []
    assert not {"emptied__ivm_state", "over_emptied__ivm_state"} & _tables(p)

    # The first real run builds both as maintained models.
    run = DbtRun(p, "--select", *models)
    assert run.success, run.messages
    assert run.messages["emptied"].startswith("built"), run.messages
    p.check_models(models)

    # --empty on built models: left as they are (not emptied, the change not applied).
    before = p.bag(f"SELECT * FROM {SCHEMA}.emptied")
    p.sql(f"INSERT INTO {SCHEMA}.base VALUES ('a', 10), ('e', 1)")
    run = DbtRun(p, "--select", *models, "--empty")
    assert run.success, run.messages
    assert {m: run.responses[m]["mode"] for m in models} == dict.fromkeys(models, "skipped")
    assert p.bag(f"SELECT * FROM {SCHEMA}.emptied") == before

    # The next real run refreshes the change in.
    run = DbtRun(p, "--select", *models)
    assert run.success and run.messages["emptied"].startswith("refreshed"), run.messages
    p.check_models(models)

    # A construct the materialization refuses fails under --empty too, creating nothing.
    (p.root / "models" / "refused_empty.sql").write_text(
        "{{ config(materialized='ivm') }}\nselect k, x from {{ source('raw', 'base') }} limit 2"
    )
    run = DbtRun(p, "--select", "refused_empty", "--empty")
    assert not run.success
    assert "refused_empty" in run.messages["refused_empty"], run.messages
    assert "LIMIT" in run.messages["refused_empty"], run.messages
    assert "refused_empty" not in _tables(p)
    (p.root / "models" / "refused_empty.sql").unlink()


def test_table_configs_reach_the_state(project: SmallProject, tmp_path_factory):
    p = project
    root = tmp_path_factory.mktemp("lake")
    config = (
        "materialized='ivm', partition_by=['k'], location_root='" + str(root) + "', "
        "tblproperties={'write.delete.mode': 'copy-on-write', 'ivm.test.owner': 'configs'}"
    )
    (p.root / "models" / "laid_out.sql").write_text(f"{{{{ config({config}) }}}}\n{AGG_SQL}")
    assert p.run("--select", "laid_out")["laid_out"].startswith("built")
    props = _properties(p, "laid_out__ivm_state")
    assert props["ivm.test.owner"] == "configs"
    assert props["write.delete.mode"] == "copy-on-write"  # the model's value wins
    assert props["write.update.mode"] == "merge-on-read"  # the plugin's own stay
    rows = p.sql(f"DESCRIBE TABLE EXTENDED {SCHEMA}.laid_out__ivm_state")
    location = next(str(r[1]) for r in rows if r[0] == "Location")
    assert location.rstrip("/").endswith(f"{root}/laid_out__ivm_state"), location
    partitions = p.sql(f"SELECT partition FROM {SCHEMA}.laid_out__ivm_state.partitions")
    assert len(partitions) >= 3, partitions  # a, b, the NULL key (and the metadata row)
    p.check_models(["laid_out"])
    p.sql(f"INSERT INTO {SCHEMA}.base VALUES ('a', 100), ('z', 1)")
    p.sql(f"DELETE FROM {SCHEMA}.base WHERE k = 'b'")
    assert p.run("--select", "laid_out")["laid_out"].startswith("refreshed")
    p.check_models(["laid_out"])

    # A result column the state does not hold as it is: an error naming the ones it does.
    (p.root / "models" / "laid_out_avg.sql").write_text(
        "{{ config(materialized='ivm', partition_by='a') }}\n"
        f"select k, avg(x) as a from {SCHEMA}.base group by k"
    )
    run = DbtRun(p, "--select", "laid_out_avg")
    assert not run.success
    message = run.messages["laid_out_avg"]
    assert "partition_by names 'a'" in message and "can partition by k" in message, message
    (p.root / "models" / "laid_out_avg.sql").unlink()
