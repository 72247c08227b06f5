"""Where the tests' dbt projects run: the embedded Spark (`session`) or a Spark Thrift server.

`IVM_TEST_TARGET` picks the default of the harness (`test_differential.py`) and of the tests
built on `SmallProject`:

* `session` (default): `method: session`, the embedded Spark in the test process;
* `thrift`: `method: thrift` against a loopback cluster (standalone master, worker, Thrift
  server with Iceberg) that the test process starts once from the pyspark install and stops
  at its end (`cluster.py`);
* `thrift://host:port`: `method: thrift` against a Thrift server you run (its catalog must be
  Iceberg's SparkSessionCatalog, see docs/reference.md, *On a Spark cluster*).

The thrift tests of the default suite (`test_thrift_cluster.py`) ask for `thrift` explicitly.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from support.cluster import LoopbackCluster

TARGET_ENV = "IVM_TEST_TARGET"
SESSION = "session"
THRIFT = "thrift"

_LOCK = threading.Lock()
_CLUSTER: LoopbackCluster | None = None


def default_target() -> str:
    """The target named by IVM_TEST_TARGET (`session` when unset)."""
    return os.environ.get(TARGET_ENV, "").strip() or SESSION


def shared_cluster() -> LoopbackCluster:
    """The process's loopback cluster, started on first use (stopped at exit or `stop_shared`)."""
    global _CLUSTER
    with _LOCK:
        if _CLUSTER is None:
            root = Path(tempfile.mkdtemp(prefix="spark_ivm_cluster_"))
            _CLUSTER = LoopbackCluster(root).start()
        return _CLUSTER


def stop_shared() -> None:
    """Stop the loopback cluster if this process started one, and delete its folder (logs,
    warehouse, metastore: 50-150 MB a run) unless IVM_KEEP_CLUSTER_FILES is set."""
    global _CLUSTER
    with _LOCK:
        if _CLUSTER is not None:
            _CLUSTER.stop()
            if not os.environ.get("IVM_KEEP_CLUSTER_FILES"):
                shutil.rmtree(_CLUSTER.root, ignore_errors=True)
            _CLUSTER = None


def is_thrift(target: str) -> bool:
    return target == THRIFT or target.startswith("thrift://")


def profile_output(target: str, schema: str, ivm_home: Path, threads: int = 4) -> dict[str, Any]:
    """The profiles.yml output for `target` (see the module docstring)."""
    if target == SESSION:
        return {
            "type": "spark_ivm",
            "method": "session",
            "host": "localhost",
            "schema": schema,
            "threads": threads,
            "ivm_home": str(ivm_home),
        }
    if target == THRIFT:
        return shared_cluster().thrift_profile(schema, threads)
    if target.startswith("thrift://"):
        url = urlparse(target)
        if not url.hostname or not url.port:
            raise ValueError(f"{TARGET_ENV}={target}: expected thrift://host:port")
        return {
            "type": "spark_ivm",
            "method": "thrift",
            "host": url.hostname,
            "port": url.port,
            "user": url.username or "dbt",
            "schema": schema,
            "threads": threads,
            "poll_interval": 1,
        }
    raise ValueError(f"{TARGET_ENV}={target}: expected session, thrift or thrift://host:port")
