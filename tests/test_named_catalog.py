"""A named Iceberg catalog as the catalog two-part names resolve in, in session mode.

Most Iceberg deployments on Spark name their catalog (`spark.sql.catalog.lake =
org.apache.iceberg.spark.SparkCatalog`) and make it the default. `session_named_catalog.py`
runs a project so configured in a process of its own (a process has one Spark, and this one's
uses the session catalog); the loopback Thrift server of `test_thrift_cluster.py` defaults to
such a catalog too, so the harness families run there through thrift.

Outcomes: each model (one naming one base table with its catalog, `lake.src.orders`, and one
without; one reading tables of three catalogs, a Hadoop catalog's merge-on-read table among
them) builds, refreshes a change of every table exactly, finds nothing to do on the next run
(its view is found in the named catalog), passes `ivm_consistent`, and its view and state
live in `lake`, the current catalog.
"""

from __future__ import annotations

from pathlib import Path

from support.own_process import run_script


def test_session_with_a_named_default_catalog(tmp_path: Path) -> None:
    out = run_script("session_named_catalog.py", str(tmp_path), cwd=tmp_path)
    assert out["catalog"] == "lake", out
    for name in ("revenue", "elsewhere"):
        runs = out[name]
        assert runs["build"]["success"], runs["build"]
        assert runs["build"]["messages"][0].startswith("built"), runs["build"]
        assert runs["refresh"]["success"], runs["refresh"]
        assert runs["refresh"]["messages"][0].startswith("refreshed"), runs["refresh"]
        assert runs["again"]["success"], runs["again"]
        assert runs["again"]["messages"][0].startswith("no MERGE"), runs["again"]
        assert runs["test"]["success"] and runs["test"]["statuses"] == ["pass"], runs["test"]
        assert runs["difference"] == [[0], [0]], (name, runs["difference"])
        assert name in out["views"], out["views"]
        assert f"{name}__ivm_state" in out["tables"], out["tables"]
