"""A named Iceberg catalog as the catalog two-part names resolve in, in session mode.

Most Iceberg deployments on Spark name their catalog (`spark.sql.catalog.lake =
org.apache.iceberg.spark.SparkCatalog`) and make it the default. `session_named_catalog.py`
runs a project so configured in a process of its own (a process has one Spark, and this one's
uses the session catalog); the loopback Thrift server of `test_thrift_cluster.py` defaults to
such a catalog too, so the harness families run there through thrift.

Outcomes: the model, which names one base table with its catalog (`lake.src.orders`) and one
without, builds, refreshes a change of both exactly, finds nothing to do on the next run (its
view is found in the named catalog), passes `ivm_consistent`, and its view and state live in
`lake`; a model reading a table of another catalog is refused with an error naming the
catalogs, creating nothing.
"""

from __future__ import annotations

from pathlib import Path

from support.own_process import run_script


def test_session_with_a_named_default_catalog(tmp_path: Path) -> None:
    out = run_script("session_named_catalog.py", str(tmp_path), cwd=tmp_path)
    assert out["catalog"] == "lake", out
    assert out["build"]["success"] and out["build"]["messages"][0].startswith("built"), out
    assert out["refresh"]["success"], out["refresh"]
    assert out["refresh"]["messages"][0].startswith("refreshed"), out["refresh"]
    assert out["again"]["success"], out["again"]
    assert out["again"]["messages"][0].startswith("no MERGE"), out["again"]
    assert out["test"]["success"] and out["test"]["statuses"] == ["pass"], out["test"]
    assert out["difference"] == [[0], [0]], out["difference"]
    assert "revenue" in out["views"], out["views"]
    assert "revenue__ivm_state" in out["tables"], out["tables"]
    elsewhere = out["elsewhere"]
    assert not elsewhere["success"], elsewhere
    message = elsewhere["messages"][0]
    assert "a relation of catalog `spark_catalog`" in message, message
    assert "current catalog is `lake`" in message, message
    assert not [t for t in out["tables_after"] if t.startswith("elsewhere")], out["tables_after"]
