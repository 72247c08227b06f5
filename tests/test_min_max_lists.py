"""MIN/MAX states keep a short ranked list per group (issue 11, item 3).

With 2 values kept per group, scripted changes walk a group's list through every case of
the rule in `aggregates/extremes.py`, and after every refresh the relation must equal a
fresh run of its SQL and the log line must say whether groups were recomputed from the
base table:

* deleting a group's extreme while the list holds another value: no base-table read;
* a refresh that deletes listed values and inserts a value past the list's last one while
  unlisted values lie between (the bound: the inserted value must not enter the list);
* a list emptied by deletes: exactly that group recomputed;
* a delta with more values than are kept (cut) meeting a stored list;
* NaN, infinities and -0.0 doubles (one value with 0.0), NULL arguments, a NULL group key,
  and string maxima;
* a state of the previous format (one value per MIN/MAX) is rebuilt, never read as lists;
* the build lists each group's extreme with an unknown count: deleting it recomputes the
  group, whose lists are then exact (the rest of the walk reads those);
* lists computed from the base table (a recompute) bounded by a sample of 4 rows.
"""

from __future__ import annotations

import pytest
from support.adversarial import assert_equal_to_sql, run_messages
from support.small_project import SmallProject

SCHEMA = "ivm_minmax_lists"
BASE = f"{SCHEMA}.vals"
MODEL = "minmax_lists"
SELECT = (
    f"select g, min(x) as mn, max(x) as mx, min(d) as dmn, max(d) as dmx, max(s) as smx, "
    f"count(*) as n from {BASE} group by g"
)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> SmallProject:
    p = SmallProject(tmp_path_factory.mktemp("minmax_lists"), "minmax_lists", SCHEMA)
    p.model(MODEL, SELECT)
    p.start_spark()
    p.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    p.sql(f"DROP TABLE IF EXISTS {BASE}")
    p.sql(f"CREATE TABLE {BASE} (g string, x int, d double, s string) USING iceberg")
    return p


def _refresh(p: SmallProject, context: str, recomputed: int) -> None:
    message = run_messages(p)[MODEL]
    assert_equal_to_sql(p, f"{SCHEMA}.{MODEL}", SELECT, context)
    if recomputed:
        assert f"{recomputed} groups recomputed" in message, f"{context}: {message}"
    else:
        assert "recomputed" not in message, f"{context}: {message}"


def test_min_max_lists_follow_deletes_and_inserts(
    project: SmallProject, monkeypatch: pytest.MonkeyPatch
):
    p = project
    monkeypatch.setenv("DBT_SPARK_IVM_MIN_MAX_KEEP", "2")
    # Lists computed from the base table count only the values up to a bound read from a
    # sample of this many rows (`extremes.first_values`): smaller than the table, so it cuts.
    monkeypatch.setenv("DBT_SPARK_IVM_MIN_MAX_SAMPLE", "4")
    # x, d and s sit in separate rows, so that one list's recompute cannot mask another's.
    rows = [
        "('a', 1, NULL, NULL)", "('a', 5, NULL, NULL)", "('a', 5, NULL, NULL)",
        "('a', 7, NULL, NULL)", "('a', NULL, 1.5, 'k')", "('a', NULL, double('-0.0'), 'm')",
        "('a', NULL, double('NaN'), 'm')", "('a', NULL, double('-inf'), 'z')",
        "('e', 1, NULL, NULL)", "('e', 10, NULL, NULL)", "('e', 20, NULL, NULL)",
        "('b', 3, 2.0, 'q')", "('b', 3, 2.0, 'q')",
        "(NULL, 4, double('inf'), 'n')", "(NULL, NULL, NULL, NULL)",
    ]  # fmt: skip
    # Each group's min(x) is 0 at the build, in a row of its own.
    rows += ["('a', 0, NULL, NULL)", "('e', 0, NULL, NULL)", "('b', 0, NULL, NULL)"]
    rows += ["(NULL, 0, NULL, NULL)"]
    p.sql(f"INSERT INTO {BASE} VALUES {', '.join(rows)}")
    messages = run_messages(p)
    assert "built" in messages[MODEL], messages
    assert_equal_to_sql(p, f"{SCHEMA}.{MODEL}", SELECT, "build")

    # The build listed each group's extreme with an unknown count ([(0, NULL)]): deleting
    # the 0s leaves it unknown whether any is left, so each group is recomputed, and its
    # lists are exact from here on.
    p.sql(f"DELETE FROM {BASE} WHERE x = 0")
    _refresh(p, "built extremes deleted", recomputed=4)

    # 'a': min(x) lists [1, 5] (7 unlisted). Deleting both 5s and inserting 9 must keep 9
    # out of the list (7 lies between, the stored list's bound): it becomes [1].
    # 'e': min(x) lists [1, 10] (20 unlisted). Deleting 1 and inserting 2, 3, 4 gives a
    # delta list [1, 2] cut after 2: 10 must not enter (3 and 4 lie between, the delta's
    # bound): it becomes [2]. Nothing is recomputed.
    p.sql(f"DELETE FROM {BASE} WHERE (g = 'a' AND x = 5) OR (g = 'e' AND x = 1)")
    p.sql(
        f"INSERT INTO {BASE} VALUES ('a', 9, NULL, NULL), ('e', 2, NULL, NULL), "
        "('e', 3, NULL, NULL), ('e', 4, NULL, NULL)"
    )
    _refresh(p, "delete listed values, insert past a bound", recomputed=0)

    # Deleting 1 of 'a' and 2 of 'e' empties both lists: those two groups are recomputed
    # (7 and 3), no other.
    p.sql(f"DELETE FROM {BASE} WHERE (g = 'a' AND x = 1) OR (g = 'e' AND x = 2)")
    _refresh(p, "lists emptied", recomputed=2)

    # Deleting the maximum 9 of 'a' (max(x) lists [9, 7]) and its NaN row (max(d) lists
    # [NaN, 1.5]; max(s) loses one of two 'm'): no recompute.
    p.sql(f"DELETE FROM {BASE} WHERE g = 'a' AND (x = 9 OR isnan(d))")
    _refresh(p, "delete maxima, another listed", recomputed=0)

    # A delta with more values than are kept, in a new group and an existing one: the new
    # group's list is cut; 'b' keeps its two 3s and gains values above and below.
    values = [f"('c', {i}, {i / 3}, 's{i}')" for i in range(10)]
    values += [f"('b', {i}, double('NaN'), 't{i}')" for i in (-4, 0, 8, 12)]
    # 'z' holds 0.0 now; -0.0 joins it next round, then leaves in two deletes.
    values += ["('z', 1, NULL, NULL)", "('z', 10, NULL, NULL)", "('z', 2, 0.0, NULL)"]
    p.sql(f"INSERT INTO {BASE} VALUES {', '.join(values)}")
    _refresh(p, "cut delta lists", recomputed=0)

    # Walk the cut list of 'c' down from both ends until it must be recomputed.
    p.sql(f"DELETE FROM {BASE} WHERE g = 'c' AND (x < 2 OR x > 7)")
    p.sql(
        f"INSERT INTO {BASE} VALUES ('z', 3, double('-0.0'), NULL), ('z', 4, double('-0.0'), NULL)"
    )
    _refresh(p, "both ends of a cut list deleted", recomputed=1)

    # NaN is the largest double: deleting 'b's NaN rows exposes 2.0 again, and takes the
    # listed x values -4 and 0 of 'b' with them (recompute of 'b' only); the NULL group
    # loses its only x (a complete list: NULL, no recompute) and gains a -0.0.
    p.sql(f"DELETE FROM {BASE} WHERE g = 'b' AND isnan(d)")
    p.sql(f"DELETE FROM {BASE} WHERE (g IS NULL AND x = 4) OR (g = 'z' AND x = 3)")
    p.sql(f"INSERT INTO {BASE} VALUES (NULL, NULL, double('-0.0'), NULL), ('b', 3, 2.0, 'q')")
    _refresh(p, "NaN deleted, NULL group emptied of values", recomputed=1)

    # -0.0 and 0.0 are one value of a list (counted once): when the last of the three
    # leaves 'z', its min(d) and max(d) are NULL.
    p.sql(f"DELETE FROM {BASE} WHERE g = 'z' AND x IN (2, 4)")
    _refresh(p, "the last of 0.0 and -0.0 deleted", recomputed=0)

    # A state of the previous format (MIN/MAX as one value, no lists) must never be read as
    # lists: a model whose view says format 2 is rebuilt, and the log says why.
    p.sql(f"ALTER VIEW {SCHEMA}.{MODEL} SET TBLPROPERTIES ('ivm.format' = '2')")
    message = run_messages(p)[MODEL]
    assert "built (its state was built in format 2" in message, message
    assert_equal_to_sql(p, f"{SCHEMA}.{MODEL}", SELECT, "rebuilt from format 2")


UNGROUPED = "minmax_ungrouped"
FLAT = f"{SCHEMA}.flat"
UNGROUPED_SELECT = f"select min(x) as mn, max(x) as mx from {FLAT}"


def test_an_ungrouped_min_max_whose_lists_run_empty_is_recomputed(
    project: SmallProject, monkeypatch: pytest.MonkeyPatch
):
    """No GROUP BY and only MIN/MAX: once deletes empty the lists, the one row is recomputed
    from the base table (that recompute rendered `SELECT FROM ..` before, and the run failed
    then and at every later run); emptied of rows, both are NULL."""
    p = project
    monkeypatch.setenv("DBT_SPARK_IVM_MIN_MAX_KEEP", "1")
    p.sql(f"DROP TABLE IF EXISTS {FLAT}")
    p.sql(f"CREATE TABLE {FLAT} (x int) USING iceberg")
    p.sql(f"INSERT INTO {FLAT} VALUES (1), (4), (9), (NULL)")
    p.model(UNGROUPED, UNGROUPED_SELECT)
    assert "built" in run_messages(p, "--select", UNGROUPED)[UNGROUPED]
    for context, statement, recomputed in (
        ("both listed extremes deleted", f"DELETE FROM {FLAT} WHERE x IN (1, 9)", True),
        ("the last value deleted", f"DELETE FROM {FLAT} WHERE x = 4", False),
        ("values again", f"INSERT INTO {FLAT} VALUES (7), (-2)", False),
    ):
        p.sql(statement)
        message = run_messages(p, "--select", UNGROUPED)[UNGROUPED]
        assert message.startswith("refreshed"), f"{context}: {message}"
        assert ("1 groups recomputed" in message) == recomputed, f"{context}: {message}"
        assert_equal_to_sql(p, f"{SCHEMA}.{UNGROUPED}", UNGROUPED_SELECT, context)
