"""Field events between two runs (issue 10, classes 2, 3 and 6): each must end in an exact
relation, or a rebuild whose reason the log states, or a clear error the next run recovers
from; never a silently wrong relation.

Every event gets its own base table and models, so one `dbt run` serves all of them: build,
an ordinary change, the event, and another ordinary change, with the relations checked
against a fresh run of their SQL after every run and the log line of each model checked
against what the event must cause (a refresh, or a rebuild naming the reason).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from support.adversarial import assert_equal_to_sql, run_messages
from support.small_project import SmallProject

SCHEMA = "ivm_adv_events"
CALL = "CALL system"


@dataclass(frozen=True)
class Event:
    name: str
    statements: tuple[str, ...]  # {t} is the event's base table, {s} the schema
    expect: dict[str, str]  # model suffix -> a phrase of its log line after the event
    columns: str = "k string, x int, y int, u string"
    models: dict[str, str] = field(
        default_factory=lambda: {
            "agg": "select k, count(*) as n, sum(x) as sx, max(y) as my from {t} group by k",
            "star": "select * from {t}",
        }
    )


REFRESHED = "refreshed"
MERGE_ON_READ = (
    "ALTER TABLE {t} SET TBLPROPERTIES ('write.delete.mode'='merge-on-read', "
    "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')"
)
EVENTS = [
    # class 2: schema evolution
    Event(
        "add_column",
        ("ALTER TABLE {t} ADD COLUMN z int", "INSERT INTO {t} VALUES ('a', 5, 6, 'n', 7)"),
        {"agg": REFRESHED, "star": "result columns changed"},
    ),
    Event(
        "drop_unused",
        ("ALTER TABLE {t} DROP COLUMN u", "INSERT INTO {t} VALUES ('a', 5, 6)"),
        {"agg": REFRESHED, "star": "result columns changed"},
    ),
    Event(
        "swap_renames",
        (
            "ALTER TABLE {t} RENAME COLUMN x TO tmp",
            "ALTER TABLE {t} RENAME COLUMN y TO x",
            "ALTER TABLE {t} RENAME COLUMN tmp TO y",
        ),
        {"agg": "is another column now", "star": "result columns changed"},
    ),
    Event(
        "readd_same_name",
        (
            "ALTER TABLE {t} DROP COLUMN y",
            "ALTER TABLE {t} ADD COLUMN y int",
            "INSERT INTO {t} VALUES ('b', 1, 'v', 3)",
        ),
        {"agg": "is another column now", "star": "result columns changed"},
    ),
    Event(
        "reorder",
        ("ALTER TABLE {t} ALTER COLUMN y FIRST",),
        {"agg": "no MERGE", "star": "result columns changed"},
    ),
    Event(
        "widen_int",
        (
            "ALTER TABLE {t} ALTER COLUMN x TYPE bigint",
            "INSERT INTO {t} VALUES ('a', 3000000000, 1, 'w')",
        ),
        {"agg": "changed type", "star": "result columns changed"},
    ),
    # class 3: Iceberg table maintenance on the base table
    Event(
        "expire_watermark",
        (
            "INSERT INTO {t} VALUES ('e', 1, 1, 'e')",
            CALL + ".expire_snapshots(table => '{s}.{n}', "
            "older_than => TIMESTAMP '2999-01-01', retain_last => 1)",
        ),
        {"agg": "was expired", "star": "was expired"},
    ),
    Event(
        "rolled_back",
        (CALL + ".rollback_to_snapshot('{s}.{n}', {parent})",),
        {"agg": REFRESHED, "star": REFRESHED},
    ),
    Event(
        "rewrite_files",
        (CALL + ".rewrite_data_files(table => '{s}.{n}', options => map('rewrite-all', 'true'))",),
        {"agg": "no base table changed", "star": "no base table changed"},
    ),
    Event(
        "insert_overwrite",
        ("INSERT OVERWRITE {t} SELECT k, x + 1, y, u FROM {t} WHERE x > 0",),
        {"agg": REFRESHED, "star": REFRESHED},
    ),
    Event(
        "drop_create",
        (
            "DROP TABLE {t}",
            "CREATE TABLE {t} (k string, x int, y int, u string) USING iceberg",
            "INSERT INTO {t} VALUES ('a', 1, 2, 'r'), (NULL, NULL, NULL, NULL)",
        ),
        {"agg": "dropped and re-created", "star": "dropped and re-created"},
    ),
    Event(
        "to_merge_on_read",
        (MERGE_ON_READ, "DELETE FROM {t} WHERE x = 1", "UPDATE {t} SET y = y + 1 WHERE k = 'b'"),
        {"agg": REFRESHED, "star": REFRESHED},
    ),
    # arrays and structs are maintained like any other column
    Event(
        "nested",
        (
            "INSERT INTO {t} VALUES ('a', array(1, NULL), named_struct('p', 1, 'q', 'x'))",
            "DELETE FROM {t} WHERE k = 'b'",
        ),
        {"flat": REFRESHED, "bykey": REFRESHED},
        columns="k string, arr array<int>, st struct<p: int, q: string>",
        models={
            "flat": "select k, arr, st from {t}",
            "bykey": "select st, arr, count(*) as n from {t} group by st, arr",
        },
    ),
]

ROWS = "('a', 1, 2, 'p'), ('a', 1, 2, 'p'), ('b', NULL, 3, NULL), (NULL, 4, NULL, 'q')"
NESTED_ROWS = (
    "('a', array(1, 2), named_struct('p', 1, 'q', 'x')), ('b', NULL, NULL), "
    "(NULL, array(), named_struct('p', NULL, 'q', NULL)), ('a', array(1, 2), "
    "named_struct('p', 1, 'q', 'x'))"
)


def _table(event: Event) -> str:
    return f"{SCHEMA}.{event.name}"


def _models(event: Event) -> dict[str, str]:
    return {
        f"{event.name}__{suffix}": select.format(t=_table(event))
        for suffix, select in event.models.items()
    }


def _ordinary_change(p: SmallProject, event: Event, step: int) -> None:
    t = _table(event)
    if event.name == "nested":
        p.sql(f"INSERT INTO {t} VALUES ('c', array({step}), named_struct('p', {step}, 'q', 'c'))")
        return
    cols = [r[0] for r in p.sql(f"DESCRIBE QUERY SELECT * FROM {t}")]
    values = {"k": "'c'", "x": str(step), "y": str(step * 2), "u": "'o'", "z": "NULL"}
    p.sql(f"INSERT INTO {t} VALUES ({', '.join(values.get(c, 'NULL') for c in cols)})")
    p.sql(f"UPDATE {t} SET k = 'd' WHERE k = 'a' AND x = 1")


def _check(p: SmallProject, context: str) -> None:
    for event in EVENTS:
        for model, select in _models(event).items():
            assert_equal_to_sql(p, f"{SCHEMA}.{model}", select, f"{context}, {event.name}")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> SmallProject:
    p = SmallProject(tmp_path_factory.mktemp("adv_events"), "adv_events", SCHEMA)
    for event in EVENTS:
        for model, select in _models(event).items():
            p.model(model, select)
    assert p.dbt("debug").success
    p.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    for event in EVENTS:
        p.sql(f"DROP TABLE IF EXISTS {_table(event)}")
        p.sql(f"CREATE TABLE {_table(event)} ({event.columns}) USING iceberg")
        p.sql(
            f"INSERT INTO {_table(event)} VALUES {NESTED_ROWS if event.name == 'nested' else ROWS}"
        )
    return p


def test_field_events_end_exact_or_rebuilt_with_their_reason(project: SmallProject):
    p = project
    run_messages(p)
    _check(p, "build")
    for event in EVENTS:
        _ordinary_change(p, event, 1)
    run_messages(p)
    _check(p, "first change")

    for event in EVENTS:
        snapshots = p.sql(
            f"SELECT snapshot_id FROM {_table(event)}.snapshots ORDER BY committed_at"
        )
        for statement in event.statements:
            p.sql(
                statement.format(t=_table(event), s=SCHEMA, n=event.name, parent=snapshots[-2][0])
            )
    messages = run_messages(p)
    wrong = [
        f"{event.name}__{suffix}: expected {phrase!r}: {messages[f'{event.name}__{suffix}']}"
        for event in EVENTS
        for suffix, phrase in event.expect.items()
        if phrase not in messages[f"{event.name}__{suffix}"]
    ]
    _check(p, "after the events")
    assert not wrong, "\n".join(wrong)

    for event in EVENTS:
        _ordinary_change(p, event, 2)
    messages = run_messages(p)
    # A rename swap that no commit followed leaves the watermark snapshot with the old
    # schema: once the table changes, that snapshot cannot be read by the model's column
    # names, and the model is rebuilt once more, saying so. Every other model refreshes.
    rebuilt = {m: text for m, text in messages.items() if "built" in text}
    assert all(
        m.startswith("swap_renames__") and "older schema" in text for m, text in rebuilt.items()
    ), rebuilt
    _check(p, "a change after the events")
