"""The embedded local Spark with Apache Iceberg that backs ``method: session``.

dbt-spark's session method runs every statement through ``SparkSession.builder...getOrCreate()``
with the profile's ``server_side_parameters``. This module computes the settings that turn that
bare session into a self-contained Iceberg engine whose files live under ``ivm_home``:

* :func:`find_project_root` / :func:`resolve_ivm_home` decide where ``ivm_home`` is;
* :func:`session_parameters` merges the plugin's defaults with the user's parameters;
* :func:`ensure_session` creates the process-wide SparkSession (or reuses it) and returns the
  parameters that still make sense to re-apply per statement.

Beside it: ``iceberg_jar.py`` (the Iceberg runtime jar it loads), ``metastore_lock.py`` (one
process at a time on its Derby metastore), ``warehouse_check.py`` (a cluster master's executors
must see the warehouse), ``jvm_exit.py`` (a JVM that stopped, said by why).

pyspark is imported lazily: the module is imported for every dbt command and every connection
method, and only ``method: session`` needs Spark.
"""

from __future__ import annotations

import os
import shlex
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dbt.adapters.events.logging import AdapterLogger
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.spark_ivm import jvm_exit, metastore_lock
from dbt.adapters.spark_ivm.iceberg_jar import find_iceberg_runtime_jar
from dbt.adapters.spark_ivm.java_classes import java_class, pin_pyspark_lookups
from dbt.adapters.spark_ivm.warehouse_check import check_warehouse_shared

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

logger = AdapterLogger("SparkIvm")

#: Folder name used for ``ivm_home`` when the profile does not set it.
DEFAULT_IVM_HOME_NAME = ".spark_ivm"

DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
DERBY_LOG_PROPERTY = "derby.stream.error.file"

#: Settings that only matter when the driver JVM is launched (pyspark passes them to
#: spark-submit); once a JVM runs in this process they can no longer take effect.
JVM_LAUNCH_SETTINGS = ("spark.driver.memory", DRIVER_JAVA_OPTIONS)

# Serialises session creation: dbt opens one connection per thread, and with threads > 1 the
# first statements of several threads would otherwise race to build the session.
_SESSION_LOCK = threading.Lock()
# ivm_home values already reported as not taking effect (log once per process, not per open).
_REPORTED_MISMATCHES: set[str] = set()


# --------------------------------------------------------------------------------------------
# Where the embedded Spark keeps its files
# --------------------------------------------------------------------------------------------


def _is_project_dir(path: str | None) -> bool:
    """True if ``path`` is a folder holding a ``dbt_project.yml``."""
    return bool(path) and (Path(str(path)) / "dbt_project.yml").is_file()


def find_project_root(config: Any = None) -> Path | None:
    """Return the root folder of the dbt project being run, or None if it cannot be known.

    Order: the ``project_root`` of dbt's RuntimeConfig (what the adapter is normally built
    with); dbt's ``--project-dir`` flag; the ``DBT_PROJECT_DIR`` environment variable; the
    current directory or its nearest parent holding ``dbt_project.yml`` (dbt's own rule).
    The flag and the variable only count if they point at a folder with ``dbt_project.yml``:
    dbt fills the flag with the current directory when nothing else is known, and that must
    never become the home of a metastore by accident.
    """
    project_root = getattr(config, "project_root", None)
    if project_root:
        return Path(project_root).resolve()

    try:
        from dbt.flags import get_flags
    except ImportError:  # used without dbt-core (e.g. from a plain script): skip the flag
        flag_dir = None
    else:
        flag_dir = getattr(get_flags(), "PROJECT_DIR", None)
    for candidate in (flag_dir, os.environ.get("DBT_PROJECT_DIR")):
        if candidate and _is_project_dir(str(candidate)):
            return Path(str(candidate)).resolve()

    cwd = Path.cwd()
    for folder in (cwd, *cwd.parents):
        if (folder / "dbt_project.yml").is_file():
            return folder.resolve()
    return None


def resolve_ivm_home(ivm_home: str | None, project_root: Path | None) -> Path | None:
    """Absolute ivm_home: as given if absolute, else relative to the project root.

    Returns None when the path is relative (or unset) and the project root is unknown.
    """
    if ivm_home:
        path = Path(os.path.expanduser(ivm_home))
        if path.is_absolute():
            return path.resolve()
        if project_root is None:
            return None
        return (project_root / path).resolve()
    if project_root is None:
        return None
    return (project_root / DEFAULT_IVM_HOME_NAME).resolve()


# --------------------------------------------------------------------------------------------
# Iceberg runtime jar
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# Session settings
# --------------------------------------------------------------------------------------------


def _jvm_started() -> bool:
    """True if this process already talks to a Spark JVM (launch settings would be ignored)."""
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # running under spark-submit / pyspark shell
        return True
    from pyspark import SparkContext

    return SparkContext._gateway is not None


def _default_driver_memory() -> str:
    """4g, or half the physical memory when that is less (the heap is a ceiling, not a grab)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not a POSIX system
        return "4g"
    return f"{max(1, min(4, total // 2 // 2**30))}g"


def _java_option(name: str, value: str) -> str:
    """``-Dname=value``, quoted for Spark's option parser if the value has spaces."""
    return shlex.quote(f"-D{name}={value}")


def _merge_java_options(user_options: str | None, derby_log: Path) -> str:
    """The user's driver Java options plus the Derby log location, unless they set it."""
    derby_option = _java_option(DERBY_LOG_PROPERTY, str(derby_log))
    if not user_options:
        return derby_option
    if f"-D{DERBY_LOG_PROPERTY}=" in user_options:
        return user_options
    return f"{user_options} {derby_option}"


def default_session_parameters(
    ivm_home: Path, user_parameters: Mapping[str, str]
) -> dict[str, str]:
    """The plugin's Spark settings for an embedded local Spark with Iceberg under ivm_home.

    ``user_parameters`` is only consulted to skip work the user has overridden (the jar
    lookup when they set ``spark.jars``); the merge itself is :func:`session_parameters`.
    """
    defaults: dict[str, str] = {
        "spark.master": "local[2]",
        "spark.app.name": "dbt-spark-ivm",
        # Iceberg as the implementation of the built-in catalog, backed by the Hive metastore
        # (Derby), so plain `db.table` names and SHOW TABLES see Iceberg tables.
        "spark.sql.extensions": (
            "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
        ),
        "spark.sql.catalog.spark_catalog": "org.apache.iceberg.spark.SparkSessionCatalog",
        "spark.sql.catalog.spark_catalog.type": "hive",
        # Without this, CREATE TABLE waits ~180 s for a Hive lock that Derby never grants.
        "spark.hadoop.iceberg.engine.hive.lock-enabled": "false",
        # A fresh Derby metastore has no version row; verification would fail on it.
        "spark.hadoop.hive.metastore.schema.verification": "false",
        # Spark's own metastore client creates the metastore's tables on first use, Iceberg's
        # does not: a named Iceberg catalog of type hive made the default
        # (`spark.sql.defaultCatalog`) reached a fresh metastore first and failed with
        # `Required table missing : "DBS"`.
        "spark.hadoop.datanucleus.schema.autoCreateAll": "true",
        # Iceberg mirrors each table's schema into the metastore, which by default refuses a
        # column whose type differs from the one at its position before: every reorder,
        # rename swap or drop + re-add of Iceberg columns (and replacing a table with another
        # schema) failed with CommitStateUnknownException. Iceberg tracks columns by id; the
        # metastore's copy is informational.
        "spark.hadoop.hive.metastore.disallow.incompatible.col.type.changes": "false",
        # Keep every file under ivm_home instead of the current directory.
        "spark.sql.warehouse.dir": str(ivm_home / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={ivm_home / 'metastore_db'};create=true"
        ),
        "spark.ui.enabled": "false",
        # The console progress bar would be drawn into dbt's own log lines.
        "spark.ui.showConsoleProgress": "false",
        # Small local data: Spark's 200 shuffle partitions make every join/aggregate slow.
        "spark.sql.shuffle.partitions": "4",
        # The status store keeps its history even with the UI off: by default 1000 SQL
        # executions (each with its plan graph and metrics), 1000 jobs and stages and every
        # RDD graph. A refresh runs dozens of statements, so a long-lived process (the test
        # suite, an orchestrator running dbt in-process) filled its 4 GiB heap with that
        # history and spent minutes per statement in GC; the suite stalled after ~35,000
        # stages. A few recent entries are all anyone reads without a UI.
        "spark.sql.ui.retainedExecutions": "20",
        "spark.ui.retainedJobs": "50",
        "spark.ui.retainedStages": "50",
        "spark.ui.retainedTasks": "1000",
        "spark.ui.dagGraph.retainedRootRDDs": "50",
        # Shuffles and broadcasts of finished statements are released only once the JVM
        # collects their handles; a young-generation-only G1 can leave them for hours.
        "spark.cleaner.periodicGC.interval": "5min",
        # Tungsten's page size defaults to 64 MiB on this heap: every broadcast hash relation
        # (a hash map of a handful of delta rows) and every aggregate's fast hash map took a
        # 64 MiB long[] of its own. Broadcast values stay in the driver's memory store until
        # the cleaner drops them, so the suite's process held ~160 of them (JFR old-object
        # sample: long[8388606] <- BytesToBytesMap <- UnsafeHashedRelation <- MemoryStore)
        # and spent both cores in full GCs. Larger inputs take more pages of 2 MiB.
        "spark.buffer.pageSize": "2m",
        # Spark keeps the classes it compiled for generated code in a cache of 100 entries by
        # default; a dbt run refreshes many models whose statements have the same shapes run
        # after run, and with 100 entries they were compiled again each time (JFR samples of
        # the test harness: Janino compiling 18.9 % of the JVM's time, 6.3 % with a larger
        # cache). Bounded, so a long-lived process keeps at most this many classes.
        "spark.sql.codegen.cache.maxEntries": "2000",
    }
    if is_local_master(user_parameters.get("spark.master", defaults["spark.master"])):
        # A local engine has no business listening on external interfaces. With a cluster
        # master the executors must reach the driver, so Spark's own choice stands.
        defaults["spark.driver.host"] = "127.0.0.1"
        defaults["spark.driver.bindAddress"] = "127.0.0.1"
    if user_parameters.get(metastore_lock.METASTORE_URIS):
        # A metastore server grants Iceberg's commit lock: keep it (two writers' commits to
        # one table are then serialised, docs/reference.md, *On a Spark cluster*).
        del defaults["spark.hadoop.iceberg.engine.hive.lock-enabled"]
    if "spark.jars" not in user_parameters:
        defaults["spark.jars"] = str(find_iceberg_runtime_jar())
    if not _jvm_started():
        # Only effective when pyspark launches the driver JVM; otherwise it would merely be
        # a misleading value in the conf.
        defaults["spark.driver.memory"] = _default_driver_memory()
    defaults[DRIVER_JAVA_OPTIONS] = _merge_java_options(
        user_parameters.get(DRIVER_JAVA_OPTIONS), ivm_home / "derby.log"
    )
    return defaults


def is_local_master(master: str) -> bool:
    """True for `local`, `local[n]`, `local[*]`, `local-cluster[...]` (driver and executors in
    this machine's processes); False for a cluster (`spark://`, `yarn`, `k8s://`, ...)."""
    return str(master).strip().startswith("local")


def session_parameters(ivm_home: Path, user_parameters: Mapping[str, str]) -> dict[str, str]:
    """The plugin's defaults overlaid with the user's parameters (the user always wins).

    The one merge rather than override is ``spark.driver.extraJavaOptions``: the Derby log
    location is appended to the user's options unless they set ``derby.stream.error.file``.

    Iceberg's commit lock is off only with the embedded Derby metastore, which never grants
    it; a Hive metastore server (``spark.hadoop.hive.metastore.uris``) grants it, and with
    one the lock stays on, as Iceberg has it:

    >>> lock = "spark.hadoop.iceberg.engine.hive.lock-enabled"
    >>> session_parameters(Path("/h"), {"spark.jars": "iceberg.jar"})[lock]
    'false'
    >>> hms = {"spark.jars": "iceberg.jar", "spark.hadoop.hive.metastore.uris": "thrift://hms:9083"}
    >>> lock in session_parameters(Path("/h"), hms)
    False
    """
    merged = default_session_parameters(ivm_home, user_parameters)
    for key, value in user_parameters.items():
        if key != DRIVER_JAVA_OPTIONS:
            merged[key] = str(value)
    return merged


# --------------------------------------------------------------------------------------------
# The process-wide session
# --------------------------------------------------------------------------------------------


def _live_session() -> SparkSession | None:
    """The process-wide SparkSession if one exists and is not stopped (getOrCreate's test)."""
    from pyspark.sql import SparkSession

    session = SparkSession._instantiatedSession
    if session is None or session._sc._jsc is None:
        return None
    return session


#: Spark-side loggers whose warnings are expected noise in the embedded set-up, raised to ERROR:
#: * ObjectStore: the Derby metastore warns "Failed to get database X" whenever dbt checks
#:   for a schema that does not exist yet, and about the schema version of a fresh metastore.
#: * HiveConf: Spark's bundled Hive warns about setting names it does not know.
#: * DataNucleus.Query: the metastore's ORM warns "Query for candidates of ... resulted in no
#:   possible candidates" when a table is dropped (dbt-spark drops seeds on every `dbt seed`).
QUIET_LOGGERS = (
    "org.apache.hadoop.hive.metastore.ObjectStore",
    "org.apache.hadoop.hive.conf.HiveConf",
    "DataNucleus.Query",
)


def _quiet_expected_warnings(session: SparkSession) -> None:
    """Raise the loggers in :data:`QUIET_LOGGERS` to ERROR (errors still show)."""
    from py4j.protocol import Py4JError

    jvm = session._jvm
    if jvm is None:
        return
    try:
        configurator = java_class(session, "org.apache.logging.log4j.core.config.Configurator")
        error = java_class(session, "org.apache.logging.log4j.Level").ERROR
        for name in QUIET_LOGGERS:
            configurator.setLevel(name, error)
    except Py4JError as exc:  # a Spark built with another logging backend: keep the noise
        logger.debug(f"spark_ivm: could not quiet Spark loggers: {exc}")


def ensure_session(parameters: Mapping[str, str]) -> dict[str, str]:
    """Create the embedded SparkSession with ``parameters`` unless one already runs.

    Returns the subset of ``parameters`` that may be set on a running session (runtime SQL
    settings such as ``spark.sql.shuffle.partitions``). dbt-spark re-applies the parameters it
    is given before every statement; passing it static settings too would make Spark warn
    "Using an existing Spark session" on every statement (it does so for any static setting
    whose value differs from the running one, and the warehouse dir is stored as ``file:...``).

    The session is a process-wide singleton: a second dbt invocation in the same process
    (tests, dbtRunner) reuses it, including its warehouse and metastore. If that invocation
    asks for another warehouse, this is logged once.
    """
    from pyspark.sql import SparkSession

    with _SESSION_LOCK:
        session = _live_session()
        reason = jvm_exit.stopped() if session is not None else None
        if reason is not None:
            raise DbtRuntimeError(reason)
        if session is None:
            master = str(parameters.get("spark.master", "local"))
            if is_local_master(master):
                # Spark otherwise resolves the machine's hostname at start-up and may pick an
                # external interface (and warns about it); a local engine needs loopback only.
                os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            database = metastore_lock.derby_database(parameters)
            if database is not None:
                metastore_lock.hold(database)
            builder = SparkSession.builder.enableHiveSupport()
            for key, value in parameters.items():
                builder = builder.config(key, value)
            session = builder.getOrCreate()
            jvm_exit.launched_with(parameters.get("spark.driver.memory"))
            if not is_local_master(master):
                check_warehouse_shared(session, master)
        else:
            wanted = parameters.get("spark.sql.warehouse.dir")
            actual = session.conf.get("spark.sql.warehouse.dir", None)
            if (
                wanted
                and actual
                and Path(wanted) != Path(actual.removeprefix("file:"))
                and wanted not in _REPORTED_MISMATCHES
            ):
                _REPORTED_MISMATCHES.add(wanted)
                logger.debug(
                    f"spark_ivm: reusing this process's SparkSession (warehouse {actual}); "
                    f"the requested warehouse {wanted} cannot take effect until the "
                    "process restarts."
                )
        _quiet_expected_warnings(session)
        pin_pyspark_lookups(session)
        return {key: value for key, value in parameters.items() if session.conf.isModifiable(key)}


# --------------------------------------------------------------------------------------------
# Folders that a DROP leaves behind
# --------------------------------------------------------------------------------------------


def remove_empty_folder(location: str) -> bool:
    """Delete the folder ``location`` if it holds no file at all (only empty folders).

    Iceberg's SparkSessionCatalog leaves such a tree behind when it drops an Iceberg view
    (``<table path>/metadata/``) or purges an Iceberg table (``metadata/``, ``data/``); Spark
    then refuses to create a managed non-Iceberg table there (LOCATION_ALREADY_EXISTS). No SQL
    statement removes a folder, so this runs on the embedded session's Hadoop file system
    (any scheme the session can read). A folder with any file in it is left alone: that is
    data, not debris. Returns True if the folder was deleted; False if there is no live
    session, no such folder, or files in it.
    """
    session = _live_session()
    if session is None:
        return False
    path = java_class(session, "org.apache.hadoop.fs.Path")(location)
    fs = path.getFileSystem(session._jsparkSession.sessionState().newHadoopConf())
    if not fs.exists(path) or not fs.getFileStatus(path).isDirectory():
        return False
    if fs.listFiles(path, True).hasNext():
        return False
    return bool(fs.delete(path, True))
