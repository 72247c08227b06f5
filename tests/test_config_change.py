"""A model's changed definition (issue 38, item 2): compared as a tree, held on request.

User-visible outcomes: a comment or reformatting of a model's SQL is no change, so the next
run refreshes the state it has (its snapshots go on) rather than rebuilding it; a state
whose records carry the digest of the raw text (built before the canonical digest) is the
same model too; under `on_configuration_change: continue` a real change of the SQL, or of
`ivm_aux_states` where it adds an auxiliary state, leaves the relation and its states as they
were, with a dbt warning naming the model and how to apply it, and the run succeeds; `apply`
(the default) and `--full-refresh` rebuild; `fail` fails the model naming it, touching
nothing. The digest's rules themselves: `test_digest_*`, no Spark.
"""

from __future__ import annotations

from collections import Counter

import pytest
from support.small_project import DbtRun as Run
from support.small_project import SmallProject, yaml_name

from dbt.adapters.spark_ivm.compiler.errors import IvmError
from dbt.adapters.spark_ivm.compiler.runtime.config_change import OnChange, held, sql_change
from dbt.adapters.spark_ivm.compiler.runtime.facts import FORMAT_VERSION
from dbt.adapters.spark_ivm.compiler.runtime.refresh import sql_hash
from dbt.adapters.spark_ivm.compiler.runtime.state_meta import SqlDigest, StateMeta

SCHEMA = "ivm_config_change"
AGG = f"select k, count(*) as n, sum(x) as s from {SCHEMA}.base group by k"
# AGG with comments, line breaks, other spacing and keyword case: the same tree.
AGG_REFORMATTED = f"""-- rows and total per key
SELECT k,
       COUNT(*)  AS n,   /* rows */
       Sum(x) as s
  FROM {SCHEMA}.base
 GROUP BY k
"""
FILTERED = f"select k, count(*) as n, sum(x) as s from {SCHEMA}.base where x > 2 group by k"
STAR = (
    f"select d.label, count(*) as n, sum(f.x) as s from {SCHEMA}.base f "
    f"join {SCHEMA}.dims d on f.k = d.k group by d.label"
)


def _write(p: SmallProject, name: str, select: str, config: str = "") -> None:
    settings = ", ".join(["materialized='ivm'", *([config] if config else [])])
    (p.root / "models" / f"{name}.sql").write_text(f"{{{{ config({settings}) }}}}\n{select}")


def _relation(p: SmallProject, name: str) -> Counter:
    return p.bag(f"SELECT * FROM {SCHEMA}.{name}")


def _snapshot_ids(p: SmallProject, name: str) -> set[int]:
    return {
        int(r[0]) for r in p.sql(f"SELECT snapshot_id FROM {SCHEMA}.{name}__ivm_state.snapshots")
    }


def _relations(p: SmallProject) -> set[str]:
    return {str(r[1]) for r in p.sql(f"SHOW TABLES IN {SCHEMA}") if not r[2]}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> SmallProject:
    p = SmallProject(tmp_path_factory.mktemp("config_change"), "config_change", SCHEMA).started()
    p.base_table("base", "k string, x int", "('a', 1), ('a', 2), ('b', 3), ('c', 4), (NULL, 5)")
    p.base_table(
        "dims", "k string, label string", "('a', 'vowel'), ('b', 'consonant')", "('c', 'consonant')"
    )
    return p


def test_a_comment_and_reformatting_refresh_the_state(project: SmallProject) -> None:
    p = project
    _write(p, "fmt", AGG)
    assert p.run("--select", "fmt")["fmt"].startswith("built")
    before = _snapshot_ids(p, "fmt")

    p.sql(f"INSERT INTO {SCHEMA}.base VALUES ('a', 10)")
    _write(p, "fmt", AGG_REFORMATTED)
    run = Run(p, "--select", "fmt")
    assert run.success, run.messages
    assert run.messages["fmt"].startswith("refreshed"), run.messages
    assert run.responses["fmt"]["mode"] == "refresh", run.responses
    after = _snapshot_ids(p, "fmt")
    assert before < after and len(after) == len(before) + 1, (before, after)  # kept, one commit
    assert _relation(p, "fmt") == p.bag(AGG)

    # Under `fail` too, reformatting is no change: the run finds nothing to do.
    _write(p, "fmt", AGG_REFORMATTED.replace("\n", "\n\n  "), "on_configuration_change='fail'")
    run = Run(p, "--select", "fmt")
    assert run.success, run.messages
    assert run.messages["fmt"].startswith("no MERGE"), run.messages
    assert _snapshot_ids(p, "fmt") == after


def test_a_state_with_the_raw_text_digest_is_not_rebuilt(project: SmallProject) -> None:
    """A state built before the canonical digest records the raw text's: still the model."""
    p = project
    _write(p, "legacy", AGG)
    assert p.run("--select", "legacy")["legacy"].startswith("built")
    compiled = p.root / "target" / "compiled" / yaml_name(p.root) / "models" / "legacy.sql"
    digest = sql_hash(compiled.read_text())
    assert digest != digest.legacy
    view, state = f"{SCHEMA}.legacy", f"{SCHEMA}.legacy__ivm_state"
    p.sql(
        f"ALTER VIEW {view} SET TBLPROPERTIES ('ivm.sql_hash' = '{digest.legacy}', "
        f"'ivm.aux_choice' = 'never:{digest.legacy}')"
    )
    p.sql(
        f"UPDATE {state} SET __ivm_meta__ = replace(__ivm_meta__, '{digest}', "
        f"'{digest.legacy}') WHERE __ivm_row__ = 1"
    )
    assert digest.legacy in str(p.sql(f"SELECT __ivm_meta__ FROM {state} WHERE __ivm_row__ = 1"))

    p.sql(f"INSERT INTO {SCHEMA}.base VALUES ('b', 20)")
    assert p.run("--select", "legacy")["legacy"].startswith("refreshed")
    assert _relation(p, "legacy") == p.bag(AGG)
    # The row now records the new digest, the view it kept the old: both still accepted.
    p.sql(f"INSERT INTO {SCHEMA}.base VALUES ('c', 30)")
    assert p.run("--select", "legacy")["legacy"].startswith("refreshed")
    assert _relation(p, "legacy") == p.bag(AGG)


def test_continue_keeps_the_relation_and_apply_rebuilds_it(project: SmallProject) -> None:
    p = project
    _write(p, "held", AGG, "on_configuration_change='continue'")
    assert p.run("--select", "held")["held"].startswith("built")
    relation, snapshots = _relation(p, "held"), _snapshot_ids(p, "held")

    # The SQL changes and so does the base: neither reaches the relation.
    p.sql(f"INSERT INTO {SCHEMA}.base VALUES ('a', 100)")
    _write(p, "held", FILTERED, "on_configuration_change='continue'")
    run = Run(p, "--select", "held")
    assert run.success, run.messages
    assert run.messages["held"].startswith("skipped"), run.messages
    assert run.responses["held"]["mode"] == "skipped", run.responses
    warned = [w for w in run.warnings if "ivm model 'held'" in w]
    assert len(warned) == 1, run.warnings
    assert "SQL changed" in warned[0] and "--full-refresh" in warned[0], warned
    assert "on_configuration_change: apply" in warned[0], warned
    assert _relation(p, "held") == relation
    assert _snapshot_ids(p, "held") == snapshots

    _write(p, "held", FILTERED, "on_configuration_change='apply'")
    run = Run(p, "--select", "held")
    assert run.success, run.messages
    assert run.messages["held"].startswith("built (the model SQL changed"), run.messages
    assert run.responses["held"]["mode"] == "rebuild", run.responses
    assert _relation(p, "held") == p.bag(FILTERED)


def test_fail_fails_the_model_and_touches_nothing(project: SmallProject) -> None:
    p = project
    _write(p, "strict", AGG, "on_configuration_change='fail'")
    assert p.run("--select", "strict")["strict"].startswith("built")
    relation, snapshots = _relation(p, "strict"), _snapshot_ids(p, "strict")

    _write(p, "strict", AGG.replace("count(*)", "count(x)"), "on_configuration_change='fail'")
    run = Run(p, "--select", "strict")
    assert not run.success
    message = run.messages["strict"]
    assert "ivm model 'strict': its SQL changed" in message, message
    assert "on_configuration_change is 'fail'" in message, message
    assert _relation(p, "strict") == relation
    assert _snapshot_ids(p, "strict") == snapshots

    # --full-refresh applies the change whatever the config says.
    run = Run(p, "--select", "strict", "--full-refresh")
    assert run.success, run.messages
    assert run.messages["strict"].startswith("built (--full-refresh)"), run.messages
    assert _relation(p, "strict") == p.bag(AGG.replace("count(*)", "count(x)"))


def test_continue_holds_a_changed_aux_states_setting(project: SmallProject) -> None:
    p = project
    _write(p, "star", STAR, "on_configuration_change='continue'")
    assert p.run("--select", "star")["star"].startswith("built")
    relation = _relation(p, "star")

    p.sql(f"INSERT INTO {SCHEMA}.dims VALUES ('d', 'consonant')")
    _write(p, "star", STAR, "on_configuration_change='continue', ivm_aux_states='always'")
    run = Run(p, "--select", "star")
    assert run.success, run.messages
    assert run.messages["star"].startswith("skipped"), run.messages
    assert "ivm_aux_states changed from 'never' to 'always'" in run.messages["star"]
    assert any("ivm model 'star'" in w for w in run.warnings), run.warnings
    assert "star__ivm_aux__ivm_state" not in _relations(p)
    assert _relation(p, "star") == relation

    _write(p, "star", STAR, "ivm_aux_states='always'")
    run = Run(p, "--select", "star")
    assert run.messages["star"].startswith("built (it now keeps an auxiliary state)"), run
    assert "star__ivm_aux__ivm_state" in _relations(p)
    assert _relation(p, "star") == p.bag(STAR)


# -- the digest, no Spark -----------------------------------------------------------------


def _digest(text: str) -> SqlDigest:
    return sql_hash(text)


def test_digest_ignores_comments_whitespace_and_keyword_case() -> None:
    assert _digest(AGG) == _digest(AGG_REFORMATTED)
    assert _digest("select k from db.t") == _digest("  SELECT\tk\n/* why */ FROM db.t;  ")
    assert sql_change(AGG, AGG_REFORMATTED) is None


@pytest.mark.parametrize(
    "changed",
    [
        "select k from db.t where s = 'A'",  # another literal
        "select k from db.t where s = 'a '",  # a literal's spacing
        "select `K` from db.t where s = 'a'",  # identifier case inside backticks
        "select k from db.t where s <> 'a'",  # another predicate
        "select k from db.t where s = 'a' and k > 0",
    ],
)
def test_digest_tells_real_changes(changed: str) -> None:
    original = "select `k` from db.t where s = 'a'"
    assert _digest(original) != _digest(changed)
    assert sql_change(original, changed) is not None


def test_digest_accepts_the_raw_text_digest_of_the_same_sql() -> None:
    text = "select k,  sum(x) as s from db.t group by k -- note"
    digest = _digest(text)
    row = f'{{"sql_hash": "{digest.legacy}", "watermarks": {{}}}}'
    legacy = StateMeta.parse(row, view_sql_hash=digest.legacy)
    assert legacy is not None and legacy.built_from(digest)
    mixed = StateMeta.parse(row.replace(digest.legacy, digest), view_sql_hash=digest.legacy)
    assert mixed is not None and mixed.built_from(digest)
    other = _digest("select k, sum(x) as s from db.t where x > 0 group by k")
    assert not mixed.built_from(other) and not other.accepts(digest.legacy)


def test_digest_of_sql_sqlglot_cannot_parse_is_of_its_text() -> None:
    text = "select from (((("
    digest = SqlDigest.of(text, FORMAT_VERSION)
    assert digest == digest.legacy == _digest(text)


def test_on_configuration_change_values() -> None:
    assert OnChange.of(None, "m") is OnChange.APPLY and OnChange.of("FAIL ", "m") is OnChange.FAIL
    with pytest.raises(IvmError, match="ivm model 'm': on_configuration_change = 'skip'"):
        OnChange.of("skip", "m")
    assert held(OnChange.APPLY, "m", "db.m", "its SQL changed", print) is None
    with pytest.raises(IvmError, match="ivm model 'm': its SQL changed.*'fail'"):
        held(OnChange.FAIL, "m", "db.m", "its SQL changed", print)
