"""A Spark cluster on loopback, from the pyspark install: standalone master, one worker and a
Spark Thrift server whose catalog is Iceberg (the plugin's embedded settings), with warehouse
and Derby metastore in a temporary folder. Its sessions resolve two-part names in a named
Iceberg catalog, `lake` (`NAMED_CATALOG`, type hive, on the same metastore), made the default
with `spark.sql.defaultCatalog`: what most Iceberg deployments on Spark do, while the embedded
session of the other tests uses the session catalog, so the differential families run against
both.

`LoopbackCluster.start()` starts the three processes on free ports, waits until the worker has
registered and the Thrift server answers a query, and `stop()` ends them (each in its own
process group, so their children go too). Use it as a context manager; `stop()` also runs at
interpreter exit, and each process ends with the process that started it (`_DIE_WITH_PARENT`),
so a failing or killed test run never leaves them behind.

Sized for a 2-core machine: the worker offers 3 task slots and 3 GiB; the Thrift server (driver
3 GiB) takes 2 slots (`spark.cores.max`) and 1 GiB, so a `method: session` driver pointed at
the same master (`spark.master: spark://...`) still gets one.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from dbt.adapters.spark_ivm import embedded, iceberg_jar
from support.spark_settings import SUITE_SPARK_SETTINGS

HOST = "127.0.0.1"
THRIFT_SERVER_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
#: Seconds to wait for each process to come up (the Thrift server creates a Derby metastore).
START_TIMEOUT = 240


class ClusterError(RuntimeError):
    """The loopback cluster could not be started (the message says which part and why)."""


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def spark_home() -> Path:
    """The pyspark install, which ships bin/spark-class, bin/spark-submit and every jar."""
    import pyspark

    return Path(pyspark.__file__).parent


def java_problem() -> str | None:
    """Why Spark cannot start here (no Java), or None."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return None
    if shutil.which("java"):
        return None
    return (
        "no Java: the loopback Spark cluster (standalone master, worker, Thrift server) needs "
        "Java 17 on PATH or JAVA_HOME"
    )


#: The named Iceberg catalog the Thrift server's sessions default to.
NAMED_CATALOG = "lake"
#: A Hadoop Iceberg catalog (a folder, no server) the Thrift server also has: sources in a
#: catalog of their own.
FILES_CATALOG = "files"


def thrift_server_parameters(home: Path, master: str) -> dict[str, str]:
    """The Thrift server's Spark settings: the embedded session's catalog settings (Iceberg
    SparkSessionCatalog on a Derby metastore under `home`) plus the named Iceberg catalog
    `NAMED_CATALOG` over the same metastore as the default one and the Hadoop catalog
    `FILES_CATALOG`, the cluster as master."""
    params = embedded.session_parameters(home, {"spark.jars": ""})
    for key in ("spark.jars", "spark.driver.memory", "spark.app.name"):
        params.pop(key, None)
    params.update(
        {
            "spark.master": master,
            "spark.app.name": "spark-ivm-thrift-server",
            "spark.cores.max": "2",
            "spark.executor.cores": "2",
            "spark.executor.memory": "1g",
            # Each connection is a session with its own Iceberg catalog, which caches a table it
            # loaded for 30 s: a long-lived session then reads an ivm state as it was before a
            # refresh that another session committed (seen: test_min_max_lists over thrift).
            "spark.sql.catalog.spark_catalog.cache-enabled": "false",
            f"spark.sql.catalog.{NAMED_CATALOG}": "org.apache.iceberg.spark.SparkCatalog",
            f"spark.sql.catalog.{NAMED_CATALOG}.type": "hive",
            f"spark.sql.catalog.{NAMED_CATALOG}.cache-enabled": "false",
            "spark.sql.defaultCatalog": NAMED_CATALOG,
            f"spark.sql.catalog.{FILES_CATALOG}": "org.apache.iceberg.spark.SparkCatalog",
            f"spark.sql.catalog.{FILES_CATALOG}.type": "hadoop",
            f"spark.sql.catalog.{FILES_CATALOG}.warehouse": str(home / "files"),
            f"spark.sql.catalog.{FILES_CATALOG}.cache-enabled": "false",
            # The server keeps every job, stage, task, SQL execution and statement for its UI
            # listeners (UI off or not): with Spark's defaults (100,000 tasks) a test run's
            # thousands of small statements filled a 2 GiB driver heap and it spent its time
            # in GC. A test server needs none of that history.
            "spark.ui.retainedJobs": "50",
            "spark.ui.retainedStages": "50",
            "spark.ui.retainedTasks": "1000",
            "spark.sql.ui.retainedExecutions": "50",
            "spark.sql.thriftServer.ui.retainedStatements": "50",
            "spark.sql.thriftServer.ui.retainedSessions": "50",
            **SUITE_SPARK_SETTINGS,
        }
    )
    return params


@dataclass
class LoopbackCluster:
    """Master, worker and Thrift server under `root` (logs, warehouse, metastore, work dirs)."""

    root: Path
    worker_cores: int = 3
    worker_memory: str = "3g"
    driver_memory: str = "3g"
    master_port: int = 0
    master_web_port: int = 0
    thrift_port: int = 0
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def master_url(self) -> str:
        return f"spark://{HOST}:{self.master_port}"

    @property
    def home(self) -> Path:
        """The Thrift server's warehouse and metastore live here."""
        return self.root / "server_home"

    def log_path(self, name: str) -> Path:
        return self.root / "logs" / f"{name}.log"

    def thrift_profile(self, schema: str, threads: int = 4) -> dict[str, Any]:
        """A profiles.yml output for `method: thrift` against this cluster's Thrift server."""
        return {
            "type": "spark_ivm",
            "method": "thrift",
            "host": HOST,
            "port": self.thrift_port,
            "user": "dbt",
            "schema": schema,
            "threads": threads,
            # dbt-spark polls a running statement every poll_interval seconds (default 5)
            "poll_interval": 1,
            "connect_retries": 0,
        }

    # ------------------------------------------------------------------------------ start

    def _spawn(self, name: str, args: list[str]) -> None:
        self.log_path(name).parent.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.update(
            {
                "SPARK_HOME": str(spark_home()),
                "SPARK_LOCAL_IP": HOST,
                "SPARK_LOG_DIR": str(self.root / "logs"),
                # the worker's executors: no other Spark's conf leaks in
                "SPARK_CONF_DIR": str(self.root / "conf"),
            }
        )
        (self.root / "conf").mkdir(exist_ok=True)
        log = self.log_path(name).open("wb")
        self.processes[name] = subprocess.Popen(
            [*_DIE_WITH_PARENT, *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=self.root,
            start_new_session=True,  # own process group: stop() kills the JVM and its children
        )
        log.close()

    def _tail(self, name: str, lines: int = 40) -> str:
        try:
            text = self.log_path(name).read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(text[-lines:])

    def _wait(self, name: str, ready: Any, what: str, timeout: float = START_TIMEOUT) -> None:
        """Poll `ready()` until true; fail with the process's log if it exits or times out."""
        deadline = time.monotonic() + timeout
        proc = self.processes[name]
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise ClusterError(
                    f"the Spark {name} exited with code {proc.returncode} before {what}; "
                    f"its log ({self.log_path(name)}) ends:\n{self._tail(name)}"
                )
            try:
                if ready():
                    return
            except OSError:
                pass
            time.sleep(1)
        raise ClusterError(
            f"the Spark {name} did not come up within {timeout:.0f}s ({what}); its log "
            f"({self.log_path(name)}) ends:\n{self._tail(name)}"
        )

    def _port_open(self, port: int) -> bool:
        with socket.socket() as s:
            s.settimeout(1)
            return s.connect_ex((HOST, port)) == 0

    def _alive_workers(self) -> int:
        url = f"http://{HOST}:{self.master_web_port}/json/"
        with urllib.request.urlopen(url, timeout=2) as resp:
            state = json.load(resp)
        return int(state.get("aliveworkers", 0))

    def _thrift_answers(self, port: int) -> bool:
        if not self._port_open(port):
            return False
        from pyhive import hive

        conn = hive.connect(host=HOST, port=port, username="dbt")
        try:
            cursor = conn.cursor()
            cursor.execute("SELECT 1")
            return cursor.fetchall() == [(1,)]
        finally:
            conn.close()

    def start(self) -> LoopbackCluster:
        """Start master, worker and Thrift server; return once all three answer."""
        problem = java_problem()
        if problem:
            raise ClusterError(problem)
        _RUNNING.append(self)
        bin_dir = spark_home() / "bin"
        self.master_port, self.master_web_port = free_port(), free_port()
        try:
            self._spawn(
                "master",
                [
                    str(bin_dir / "spark-class"),
                    "org.apache.spark.deploy.master.Master",
                    "--host", HOST,
                    "--port", str(self.master_port),
                    "--webui-port", str(self.master_web_port),
                ],
            )  # fmt: skip
            self._wait("master", lambda: self._port_open(self.master_web_port), "its web port")
            (self.root / "worker").mkdir(parents=True, exist_ok=True)
            self._spawn(
                "worker",
                [
                    str(bin_dir / "spark-class"),
                    "org.apache.spark.deploy.worker.Worker",
                    "--host", HOST,
                    "--webui-port", str(free_port()),
                    "--cores", str(self.worker_cores),
                    "--memory", self.worker_memory,
                    "--work-dir", str(self.root / "worker"),
                    self.master_url,
                ],
            )  # fmt: skip
            self._wait("worker", lambda: self._alive_workers() >= 1, "registering at the master")
            self.thrift_port = free_port()
            self.home.mkdir(parents=True, exist_ok=True)
            jar = str(iceberg_jar.find_iceberg_runtime_jar())
            args = [
                str(bin_dir / "spark-submit"),
                "--class", THRIFT_SERVER_CLASS,
                "--master", self.master_url,
                "--driver-memory", self.driver_memory,
                # both: with --jars alone every session after the first fails with
                # NoClassDefFoundError (Hive closes the session's class loader)
                "--jars", jar,
                "--driver-class-path", jar,
            ]  # fmt: skip
            for key, value in thrift_server_parameters(self.home, self.master_url).items():
                args += ["--conf", f"{key}={value}"]
            args += [
                "--hiveconf", f"hive.server2.thrift.bind.host={HOST}",
                "--hiveconf", f"hive.server2.thrift.port={self.thrift_port}",
                "spark-internal",
            ]  # fmt: skip
            self._spawn("thrift-server", args)
            self._wait(
                "thrift-server",
                lambda: self._thrift_answers(self.thrift_port),
                "answering SELECT 1",
            )
        except BaseException:
            self.stop()
            raise
        return self

    def start_plain_thrift_server(self) -> int:
        """A second Thrift server without any Iceberg setting (Spark's built-in catalog),
        `local[1]`, its own metastore: what a user pointing the plugin at an ordinary Spark
        Thrift server has. Returns its port; `stop()` ends it with the rest."""
        home = self.root / "plain_home"
        home.mkdir(parents=True, exist_ok=True)
        port = free_port()
        args = [
            str(spark_home() / "bin" / "spark-submit"),
            "--class", THRIFT_SERVER_CLASS,
            "--master", "local[1]",
            "--driver-memory", "768m",
            "--conf", f"spark.sql.warehouse.dir={home / 'warehouse'}",
            "--conf", (
                "spark.hadoop.javax.jdo.option.ConnectionURL="
                f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true"
            ),
            "--conf", f"spark.driver.extraJavaOptions=-Dderby.stream.error.file={home}/derby.log",
            "--conf", "spark.ui.enabled=false",
            "--conf", f"spark.driver.host={HOST}",
            "--conf", f"spark.driver.bindAddress={HOST}",
            "--hiveconf", f"hive.server2.thrift.bind.host={HOST}",
            "--hiveconf", f"hive.server2.thrift.port={port}",
            "spark-internal",
        ]  # fmt: skip
        try:
            self._spawn("plain-thrift-server", args)
            self._wait("plain-thrift-server", lambda: self._thrift_answers(port), "SELECT 1")
        except BaseException:
            self.stop()
            raise
        return port

    # ------------------------------------------------------------------------------ stop

    def stop_process(self, name: str) -> None:
        """End one process this cluster started, and its children (its process group)."""
        proc = self.processes.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=10)

    def stop(self) -> None:
        """End every process this cluster started (Thrift servers first), and their children."""
        for name in ("plain-thrift-server", "thrift-server", "worker", "master"):
            self.stop_process(name)
        if self in _RUNNING:
            _RUNNING.remove(self)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


_RUNNING: list[LoopbackCluster] = []

#: Each process gets SIGTERM when the test process that started it dies, however it dies:
#: `atexit` below runs only on a normal exit, and an xdist worker whose run was killed or
#: timed out left the master, worker and Thrift server JVMs running (they slowed the next
#: run twofold). util-linux's `setpriv` sets Linux's parent-death signal, then execs the
#: command (the JVM keeps it across exec); where it is missing, the atexit stop is all.
#: Linux sends it when the *thread* that forked the process ends: start a cluster from a
#: thread that lives as long as the cluster does (the suite starts them in the main thread).
_SETPRIV = shutil.which("setpriv")
_DIE_WITH_PARENT = [_SETPRIV, "--pdeathsig", "TERM", "--"] if _SETPRIV else []


@atexit.register
def _stop_all() -> None:
    """Stop clusters a crashed or interrupted run left running."""
    while _RUNNING:
        _RUNNING[-1].stop()
