"""Set operations and bag inputs over hostile doubles, and field events under them (issue 10,
classes 1-3, on the set operations of issue 13 item 1).

Two Iceberg tables `a` and `b` (id, x double, s string) hold NaN, +inf, -inf, -0.0 and 0.0,
NULL, duplicates, and the strings '' and NULL. Over them, ivm models: UNION ALL, UNION,
INTERSECT, EXCEPT, INTERSECT ALL and EXCEPT ALL of (x, s), and an EXCEPT ALL of x alone;
over the UNION ALL model (a bag-shaped ivm model, read through `ref`) an aggregate grouped by
x and an EXCEPT ALL against `b`; over the EXCEPT ALL model (a bag shown l - r times) a plain
filtered SELECT.

Spark's set operations and GROUP BY take -0.0 and 0.0 for one value (and show 0.0) and NaN
for equal to NaN; a UNION ALL shows each row as its branch reads it. A relation must show
what a fresh run of its SQL shows, so the comparison is of each row's JSON text
(`to_json(struct(*))`, EXCEPT ALL both ways): -0.0 and 0.0 are told apart there, where an
EXCEPT ALL of the rows themselves (`adversarial.bag_difference`) pairs them. Only the models
listed in `SIGN_OF_ZERO_LOST` would be compared by value; none is since bag states key
doubles by their text (the UNION ALL model lost the sign of zero before, which the last test
shows).

Scenario (10 dbt runs): build; a round that moves rows between the sides (a row deleted on
the left and inserted on the right, 0.0 updated to -0.0 on one side and -0.0 to 0.0 on the
other, NaN and inf appearing and vanishing on either side); then four field events on the base tables, each followed by a run
(its log line must say `refreshed` or name the rebuild's reason) and by an ordinary change
and another run: a column added to `a`, `expire_snapshots` after more changes,
`rewrite_data_files`, a switch to merge-on-read writes. Every relation is compared after
every run.
"""

from __future__ import annotations

import pytest
from support.adversarial import run_messages
from support.small_project import SmallProject

SCHEMA = "ivm_adv_setops"
A, B = f"{SCHEMA}.a", f"{SCHEMA}.b"
CALL = "CALL system"

NAN, INF, NINF = "double('NaN')", "double('Infinity')", "double('-Infinity')"
# Not CAST(-0.0 AS DOUBLE): -0.0 is a decimal literal there, and a decimal has no -0.
NEG0, POS0 = "double('-0.0')", "double('0.0')"

_XS = f"select x, s from {A} {{op}} select x, s from {B}"
UNION_ALL = "setops_union_all"  # the bag-shaped upstream of two `bags_` models
EXCEPT_ALL = "setops_except_all"  # the upstream of `bags_plain`
# name -> SELECT; {union_all} and {except_all} are the upstream models: a ref in the model,
# the relation in the check
MODELS: dict[str, str] = {
    UNION_ALL: _XS.format(op="union all"),
    "setops_union": _XS.format(op="union"),
    "setops_intersect": _XS.format(op="intersect"),
    "setops_except": _XS.format(op="except"),
    "setops_intersect_all": _XS.format(op="intersect all"),
    EXCEPT_ALL: _XS.format(op="except all"),
    "setops_x_except_all": f"select x from {A} except all select x from {B} where x is not null",
    "bags_grouped": (
        "select x, count(*) as n, count(s) as ns, max(s) as ms from {union_all} group by x"
    ),
    "bags_except_all": f"select x, s from {{union_all}} except all select x, s from {B}",
    "bags_plain": "select x, s, x + 1 as x1 from {except_all} where s is null or s <> 'q'",
}
# Models compared by value (Spark's EXCEPT ALL: -0.0 = 0.0, NaN = NaN), not as text. Empty
# since a bag state keys doubles by their text (`plan.bag_key`); before, the UNION ALL model
# showed 0.0 for -0.0 (`test_a_bag_keeps_the_sign_of_zero`).
SIGN_OF_ZERO_LOST: set[str] = set()


def _model_sql(select: str) -> str:
    return select.format(
        union_all=f"{{{{ ref('{UNION_ALL}') }}}}", except_all=f"{{{{ ref('{EXCEPT_ALL}') }}}}"
    )


def _check_sql(select: str) -> str:
    return select.format(union_all=f"{SCHEMA}.{UNION_ALL}", except_all=f"{SCHEMA}.{EXCEPT_ALL}")


def _as_text(query: str) -> str:
    """Each row of `query` as its JSON text: -0.0 and 0.0 differ, NaN is "NaN"."""
    return f"SELECT to_json(struct(*)) AS j FROM ({query}) __t"


def _differences(model: str, select: str, by_value: bool = False) -> str:
    """A query of the rows where the model's relation and `select` differ as bags: (model,
    'missing' (in the SQL only) or 'extra' (in the relation only), the row as JSON). Rows
    are compared as text, or `by_value` (Spark's EXCEPT ALL: -0.0 = 0.0, NaN = NaN)."""
    rel, sel = f"SELECT * FROM {SCHEMA}.{model}", select
    row = "to_json(struct(*))"
    if not by_value:
        rel, sel, row = _as_text(rel), _as_text(sel), "j"
    return (
        f"SELECT '{model}' AS m, 'missing' AS side, {row} AS r FROM (({sel}) EXCEPT ALL "
        f"({rel})) UNION ALL SELECT '{model}', 'extra', {row} FROM (({rel}) EXCEPT ALL ({sel}))"
    )


def _check(p: SmallProject, context: str) -> None:
    """Every relation equals a fresh run of its SQL (one Spark query for all models)."""
    parts = [
        _differences(model, _check_sql(select), by_value=model in SIGN_OF_ZERO_LOST)
        for model, select in MODELS.items()
    ]
    rows = p.sql(" UNION ALL ".join(parts) + " LIMIT 40")
    assert not rows, f"{context}: relations differ from their SQL:\n" + "\n".join(
        f"  {model}: {side} {row}" for model, side, row in sorted(rows)
    )


REFRESHED = {"base": "refreshed", "bags": "refreshed"}


def _run(p: SmallProject, phrases: dict[str, str | tuple[str, ...]], context: str) -> None:
    """`dbt run`; each model's log line holds the phrase of its group, or one of them (`base`:
    the models over a and b, `bags`: the models over another ivm model); then every relation
    checked."""
    messages = run_messages(p)

    def said(model: str, message: str) -> bool:
        wanted = phrases[_group(model)]
        return any(w in message for w in ((wanted,) if isinstance(wanted, str) else wanted))

    wrong = [
        f"{model}: expected {phrases[_group(model)]!r}: {message}"
        for model, message in messages.items()
        if not said(model, message)
    ]
    _check(p, context)
    assert not wrong, f"{context}:\n" + "\n".join(wrong)


def _group(model: str) -> str:
    return "bags" if model.startswith("bags_") else "base"


def _insert(p: SmallProject, table: str, *rows: str) -> None:
    """Rows of (id, x, s); a column added later is NULL (Iceberg wants every column)."""
    added = len(p.sql(f"DESCRIBE QUERY SELECT * FROM {table}")) - 3
    padded = [row[:-1] + ", NULL" * added + ")" for row in rows]
    p.sql(f"INSERT INTO {table} VALUES {', '.join(padded)}")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> SmallProject:
    p = SmallProject(tmp_path_factory.mktemp("adv_setops"), "adv_setops", SCHEMA)
    for model, select in MODELS.items():
        p.model(model, _model_sql(select))
    p.start_spark()
    p.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    for table in (A, B):
        p.sql(f"DROP TABLE IF EXISTS {table}")
        p.sql(f"CREATE TABLE {table} (id int, x double, s string) USING iceberg")
    _insert(
        p, A,
        f"(1, {NEG0}, 'p')", f"(2, {POS0}, 'p')", f"(3, {NAN}, '')", f"(4, {NAN}, '')",
        f"(5, {INF}, NULL)", f"(6, {NINF}, 'q')", "(7, NULL, NULL)", "(8, NULL, '')",
        "(9, 1.5, 'p')", "(10, 1.5, 'p')", f"(11, {POS0}, NULL)", f"(12, {NEG0}, '')",
    )  # fmt: skip
    _insert(
        p, B,
        f"(1, {POS0}, 'p')", f"(2, {NAN}, '')", f"(3, {NINF}, 'q')", "(4, NULL, NULL)",
        f"(5, {INF}, 'q')", f"(6, {NEG0}, NULL)", "(7, 2.5, '')", f"(8, {NEG0}, 'p')",
    )  # fmt: skip
    return p


def _moves(p: SmallProject) -> None:
    """Rows move between the sides: (NaN, '') deleted on the left and inserted (twice) on
    the right; (inf, 'q') the other way; 0.0 -> -0.0 on the left, -0.0 -> 0.0 on the right;
    -inf leaves the left, a (-0.0, NULL) arrives."""
    p.sql(f"DELETE FROM {A} WHERE id = 3")
    _insert(p, B, f"(9, {NAN}, '')", f"(10, {NAN}, '')")
    p.sql(f"DELETE FROM {B} WHERE id = 5")
    _insert(p, A, f"(13, {INF}, 'q')", f"(14, {NEG0}, NULL)")
    p.sql(f"UPDATE {A} SET x = {NEG0} WHERE id = 2")
    p.sql(f"UPDATE {B} SET x = {POS0} WHERE id IN (6, 8)")
    p.sql(f"DELETE FROM {A} WHERE x = {NINF}")


def _ordinary_change(p: SmallProject, step: int) -> None:
    """The change after event `step` (1-4): zeros of either sign, NaN, inf and -inf rows
    come, go and cross over; '' and NULL strings swap. Rows of a new string (twice on the
    left, once on the right, and one only on the left) change every model's result, so
    each must refresh."""
    v, first = (NAN, NEG0, INF, NINF)[step - 1], 100 + 10 * step
    _insert(p, A, *(f"({first + i}, {v}, '{tag}{step}')" for i, tag in enumerate("rrl")))
    _insert(p, B, f"({first}, {v}, 'r{step}')")
    if step == 1:  # -0.0 -> 0.0 on the left; a NaN leaves the right; -inf returns left
        p.sql(f"UPDATE {A} SET x = {POS0} WHERE x = 0 AND s = 'p'")
        p.sql(f"DELETE FROM {B} WHERE id = 9")
        _insert(p, A, f"(15, {NINF}, 'q')", f"(16, {NAN}, NULL)")
        p.sql(f"UPDATE {B} SET s = CASE WHEN s IS NULL THEN '' ELSE NULL END WHERE id IN (4, 7)")
    elif step == 2:  # a zero and a NaN arrive left, inf right, the first zero leaves right
        _insert(p, A, f"(17, {NEG0}, 'p')", f"(18, {NAN}, '')")
        _insert(p, B, f"(11, {INF}, NULL)", f"(12, {INF}, 'q')")
        [(first_zero,)] = p.sql(f"SELECT min(id) FROM {B} WHERE x = 0")
        p.sql(f"DELETE FROM {B} WHERE id = {first_zero}")
    elif step == 3:  # a NaN row crosses from right to left; 0.0 -> -0.0 on the right
        p.sql(f"DELETE FROM {B} WHERE id = 10")
        _insert(p, A, f"(19, {NAN}, '')")
        p.sql(f"UPDATE {B} SET x = {NEG0} WHERE x = 0")
    else:  # merge-on-read: updates and deletes leave delete files
        p.sql(f"UPDATE {A} SET x = {POS0} WHERE x = 0 AND s IS NULL")
        p.sql(f"UPDATE {A} SET x = {INF} WHERE id = 16")
        p.sql(f"DELETE FROM {B} WHERE s = ''")


def test_set_operations_over_hostile_doubles_and_field_events(project: SmallProject):
    p = project
    _run(p, {"base": "first run", "bags": "first run"}, "build")
    _moves(p)
    _run(p, REFRESHED, "rows moved between the sides")

    def event_then_change(step: int, event: str, phrases: dict[str, str]) -> None:
        _run(p, phrases, event)
        _ordinary_change(p, step)
        _run(p, REFRESHED, f"a change after {event}")

    # A column added to a source, and rows that fill it: the models read x and s only.
    p.sql(f"ALTER TABLE {A} ADD COLUMN z int")
    p.sql(f"INSERT INTO {A} VALUES (20, {NEG0}, 'q', 7), (21, {NAN}, NULL, NULL)")
    event_then_change(1, "add column", REFRESHED)

    # More changes, then every snapshot but the last expired: the watermarks are gone, the
    # models over a and b are rebuilt; so are the upstreams, and the models over them read
    # their rebuilt states.
    _insert(p, B, f"(30, {POS0}, 'q')", f"(31, {NEG0}, NULL)")
    p.sql(f"DELETE FROM {A} WHERE id = 21")
    for table in (A, B):
        p.sql(
            f"{CALL}.expire_snapshots(table => '{table}', "
            "older_than => TIMESTAMP '2999-01-01', retain_last => 1)"
        )
    # (An upstream rebuilt replaces its state in one commit: a model over it reads that as
    # the version diff of the state, unless it reads an expired table itself.)
    upstream_rebuilt = "its state is not a descendant of the version this model read"
    expired = {"base": "was expired", "bags": (upstream_rebuilt, "was expired")}
    event_then_change(2, "expire_snapshots", expired)

    # Compaction: the same rows in other files, nothing for any model to do.
    for table in (A, B):
        p.sql(
            f"{CALL}.rewrite_data_files(table => '{table}', options => map('rewrite-all', 'true'))"
        )
    unchanged = {"base": "no base table changed", "bags": "no base table changed"}
    event_then_change(3, "rewrite_data_files", unchanged)

    # Merge-on-read writes: deletes and updates leave delete files (read by version diff).
    for table in (A, B):
        p.sql(
            f"ALTER TABLE {table} SET TBLPROPERTIES ('write.delete.mode'='merge-on-read', "
            "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')"
        )
    p.sql(f"UPDATE {A} SET x = {NEG0} WHERE x = 0")
    p.sql(f"DELETE FROM {B} WHERE x = {INF} AND s IS NULL")
    p.sql(f"UPDATE {B} SET x = {NAN} WHERE id = 7")
    event_then_change(4, "merge-on-read", REFRESHED)


def test_a_bag_keeps_the_sign_of_zero(project: SmallProject):
    """A UNION ALL shows each row as its branch reads it: -0.0 stays -0.0 (its SQL does not
    group). The tables hold -0.0 from the build on, and after the scenario above."""
    p = project
    if not p.sql(f"SHOW TABLES IN {SCHEMA} LIKE '{UNION_ALL}'"):
        run_messages(p)  # run alone: build the models first
    if not p.sql(f"SELECT count(*) FROM {A} WHERE CAST(x AS STRING) = '-0.0'")[0][0]:
        pytest.fail("no -0.0 in a: the test shows nothing")  # not an xfail
    diff = p.sql(_differences(UNION_ALL, MODELS[UNION_ALL]) + " LIMIT 10")
    assert not diff, "\n".join(f"{side} {row}" for _, side, row in diff)
