"""What a refresh trusts of a base table (pure: no Spark). `test_adversarial_events.py`
shows the same decisions on real Iceberg tables; these pin down each rule."""

from __future__ import annotations

import json

from dbt.adapters.spark_ivm.compiler.capture import CaptureMethod, Snapshot, choose_method
from dbt.adapters.spark_ivm.compiler.runtime import base_tables


def _metadata(fields: list[tuple[int, str, str]], schema_id: int = 0, uuid: str = "u1"):
    doc = {
        "table-uuid": uuid,
        "current-schema-id": schema_id,
        "schemas": [
            {"schema-id": 99, "fields": []},
            {
                "schema-id": schema_id,
                "fields": [{"id": i, "name": n, "type": t} for i, n, t in fields],
            },
        ],
        "snapshots": [
            {"snapshot-id": 1, "summary": {"operation": "append"}},
            {"snapshot-id": 2, "parent-snapshot-id": 1, "summary": {"operation": "replace"}},
        ],
    }
    return base_tables.parse_metadata("file:/m.json", [(json.dumps(doc),)])


def test_metadata_file_is_parsed_into_columns_by_id_and_snapshots():
    meta = _metadata([(1, "K", "string"), (2, "x", "int")], schema_id=3)
    assert meta.columns == {"k": (1, "string"), "x": (2, "int")}
    assert meta.snapshots[2] == Snapshot(2, 1, 0, "replace")
    assert (
        base_tables.metadata_file_sql("file:/a`b.json")
        == "SELECT value FROM text.`file:/a``b.json`"
    )


def test_a_schema_change_is_trusted_only_where_the_columns_read_keep_id_and_type():
    first = _metadata([(1, "k", "string"), (2, "x", "int")])
    before = base_tables.fingerprint(first, ["k", "x"], 1)
    assert before.live is False and before.columns == {"k": (1, "string"), "x": (2, "int")}
    same = _metadata([(1, "k", "string"), (2, "x", "int"), (3, "z", "int")], schema_id=1)
    assert base_tables.untrusted("s.t", before, same, ["k", "x"]) is None  # a column added
    swapped = _metadata([(1, "k", "string"), (3, "x", "int"), (2, "y", "int")], schema_id=2)
    assert "is another column now" in base_tables.untrusted("s.t", before, swapped, ["k", "x"])
    widened = _metadata([(1, "k", "string"), (2, "x", "long")], schema_id=3)
    assert "changed type" in base_tables.untrusted("s.t", before, widened, ["k", "x"])
    gone = _metadata([(1, "k", "string")], schema_id=4)
    assert "is gone" in base_tables.untrusted("s.t", before, gone, ["k", "x"])
    star = _metadata([(1, "k", "string"), (2, "x", "int"), (3, "z", "int")], schema_id=5)
    assert "now reads column z" in base_tables.untrusted("s.t", before, star, ["k", "x", "z"])
    other = _metadata([(1, "k", "string"), (2, "x", "int")], uuid="u2")
    assert "dropped and re-created" in base_tables.untrusted("s.t", before, other, ["k", "x"])
    unchanged_schema = _metadata([(7, "k", "string")], schema_id=0)  # same id: not re-read
    assert base_tables.untrusted("s.t", before, unchanged_schema, ["k", "x"]) is None


def test_a_snapshot_written_before_a_rename_is_stale_for_the_renamed_columns_only():
    """`VERSION AS OF` reads a snapshot with the schema it was written with."""
    doc = {
        "table-uuid": "u",
        "current-schema-id": 1,
        "schemas": [
            {"schema-id": 0, "fields": [{"id": 1, "name": "k", "type": "string"},
                                        {"id": 2, "name": "x", "type": "int"},
                                        {"id": 3, "name": "y", "type": "int"}]},
            {"schema-id": 1, "fields": [{"id": 1, "name": "k", "type": "string"},
                                        {"id": 3, "name": "x", "type": "int"},
                                        {"id": 2, "name": "y", "type": "int"}]},
        ],
        "snapshots": [{"snapshot-id": 7, "schema-id": 0, "summary": {"operation": "append"}}],
    }  # fmt: skip
    meta = base_tables.parse_metadata("m", [(json.dumps(doc),)])
    assert meta.stale(7, ["k", "x"]) and meta.stale(7, ["y"])
    assert not meta.stale(7, ["k"]) and not meta.stale(None, ["x"])
    assert base_tables.fingerprint(meta, ["x"], 7).live is True


def test_capture_method_follows_the_lineage_and_says_why_not():
    snaps = {
        1: Snapshot(1, None, 0, "append"),
        2: Snapshot(2, 1, 0, "overwrite"),
        3: Snapshot(3, 2, 0, "replace"),
        4: Snapshot(4, 3, 1, "delete"),
        5: Snapshot(5, 1, 0, "append"),  # a rollback to 1 and a new commit
    }
    assert choose_method(snaps, 2, 2) is CaptureMethod.NONE
    assert choose_method(snaps, 1, 2) is CaptureMethod.CHANGELOG
    assert choose_method(snaps, 2, 3) is CaptureMethod.NONE  # only a compaction
    assert choose_method(snaps, 2, 4) is CaptureMethod.VERSION_DIFF  # delete files
    assert choose_method(snaps, 2, 5) is CaptureMethod.VERSION_DIFF  # 2 is no ancestor of 5
    assert choose_method(snaps, None, 2) is CaptureMethod.CHANGELOG
    assert "was expired" in str(choose_method(snaps, 42, 5))
    assert "no snapshot" in str(choose_method(snaps, 1, None))


def test_a_model_reading_a_map_column_is_refused_naming_it_and_one_not_reading_it_is_not():
    import pytest

    from dbt.adapters.spark_ivm.compiler.errors import UnsupportedQueryError
    from dbt.adapters.spark_ivm.compiler.frontend.analyze import analyze

    schemas = {"s.t": [("k", "string"), ("m", "map<string,int>"), ("a", "array<int>")]}
    with pytest.raises(UnsupportedQueryError, match=r"'m1'.*map type.*s\.t\.m map<string,int>"):
        analyze("select k, m['x'] as v from t", "m1", schemas, "s")
    q = analyze("select k, a from t", "m2", schemas, "s")
    assert q.columns_read() == {"s.t": ["k", "a"]}


def test_a_filter_clause_folds_into_its_argument_and_one_it_cannot_fold_is_refused():
    import pytest

    from dbt.adapters.spark_ivm.compiler.errors import UnsupportedQueryError
    from dbt.adapters.spark_ivm.compiler.frontend.analyze import analyze

    schemas = {"s.t": [("k", "string"), ("x", "int")]}
    q = analyze(
        "select k, sum(x) filter (where x > 1) as s, count_if(x < 0) as n from t group by k",
        "m1",
        schemas,
        "s",
    )
    assert [a.call.sql("spark") for a in q.aggregates] == [
        "SUM(CASE WHEN t.x > 1 THEN t.x END)",
        "COUNT(CASE WHEN t.x < 0 THEN 1 END)",
    ]
    with pytest.raises(UnsupportedQueryError, match=r"'m2'.*FILTER clause on first\(\)"):
        analyze(
            "select k, first(x) filter (where x > 1) as f from t group by k", "m2", schemas, "s"
        )
