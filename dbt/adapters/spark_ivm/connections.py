"""Credentials and connection manager of the spark_ivm adapter.

Everything dbt-spark supports keeps working unchanged; the additions are that
``method: session`` starts a self-contained local Spark with Apache Iceberg whose warehouse,
Derby metastore and ``derby.log`` live under ``ivm_home`` (see :mod:`.embedded`), and that
``method: thrift`` says plainly when the Thrift server cannot be reached or its catalog is not
Iceberg (checked once per server and process, on the first connection).
"""

from __future__ import annotations

import threading
from collections.abc import Generator, Iterable
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.context import SpawnContext
from pathlib import Path
from typing import Any

from dbt.adapters.contracts.connection import (
    AdapterRequiredConfig,
    Connection,
    ConnectionState,
)
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.exceptions.connection import FailedToConnectError
from dbt.adapters.spark.connections import (
    SparkConnectionManager,
    SparkConnectionMethod,
    SparkCredentials,
)
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.spark_ivm import embedded, jvm_exit

logger = AdapterLogger("SparkIvm")

#: What the ivm materialization needs of a server's session catalog and SQL extensions.
ICEBERG_CATALOG_PACKAGE = "org.apache.iceberg.spark."
ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
#: The catalog two-part names resolve in when the server sets none (Spark's session catalog).
SESSION_CATALOG = "spark_catalog"
#: Where a user finds a Thrift server's start command with Iceberg.
SERVER_HELP = "docs/reference.md, 'On a Spark cluster', shows a Thrift server started with Iceberg"

# (host, port, session settings) of Thrift servers whose catalog was found to be Iceberg in
# this process.
_CHECKED_SERVERS: set[tuple[str, int, tuple[tuple[str, str], ...]]] = set()
_CHECK_LOCK = threading.Lock()


@dataclass
class SparkIvmCredentials(SparkCredentials):
    """dbt-spark's credentials plus where the embedded Spark keeps its files.

    ``ivm_home``: folder for the embedded Spark's warehouse and Derby metastore (session
    method only). Unset means ``<dbt project root>/.spark_ivm``; a relative path is taken
    from the project root. The connection manager replaces it with the absolute path once
    the project root is known, so ``dbt debug`` shows the folder actually used.
    """

    ivm_home: str | None = None

    @property
    def type(self) -> str:
        """The adapter type named in profiles.yml (``type: spark_ivm``)."""
        return "spark_ivm"

    def _connection_keys(self) -> tuple[str, ...]:
        """Fields shown by ``dbt debug``: dbt-spark's plus the method and ivm_home."""
        return (*super()._connection_keys(), "method", "ivm_home")

    def connection_info(self, *, with_aliases: bool = False) -> Iterable[tuple[str, Any]]:
        """Pretty-printed connection fields; an unresolved ivm_home shows where it would go.

        ``dbt debug`` prints this before any adapter (and thus before the connection manager
        resolves ``ivm_home``) exists, so the default would otherwise show as ``None``.
        """
        for key, value in super().connection_info(with_aliases=with_aliases):
            if key == "ivm_home" and self.method == SparkConnectionMethod.SESSION:
                resolved = embedded.resolve_ivm_home(value, embedded.find_project_root())
                value = str(resolved) if resolved is not None else value
            yield key, value


class SparkIvmConnectionManager(SparkConnectionManager):
    """dbt-spark's connection manager, with the embedded Iceberg Spark for ``method: session``."""

    TYPE = "spark_ivm"

    def __init__(self, profile: AdapterRequiredConfig, mp_context: SpawnContext) -> None:
        """Resolve ``ivm_home`` while the RuntimeConfig (and its project root) is at hand.

        ``open`` is a classmethod that only sees the connection's credentials, which are this
        profile's credentials object, so the absolute path is stored there.
        """
        super().__init__(profile, mp_context)
        credentials = getattr(profile, "credentials", None)
        if isinstance(credentials, SparkIvmCredentials):
            _resolve_credentials_ivm_home(credentials, profile)

    @contextmanager
    def exception_handler(self, sql: str) -> Generator[None, None, None]:
        """dbt-spark's, except that a statement failing because the embedded Spark stopped
        says so and why (`jvm_exit.py`), not py4j's `Connection refused`."""
        try:
            with super().exception_handler(sql):
                yield
        except Exception as exc:
            reason = jvm_exit.stopped()
            if reason is not None:
                raise DbtRuntimeError(reason) from exc
            raise

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        """Open like dbt-spark, after preparing the embedded Spark for the session method."""
        credentials = connection.credentials
        if (
            connection.state != ConnectionState.OPEN
            and isinstance(credentials, SparkIvmCredentials)
            and credentials.method == SparkConnectionMethod.SESSION
        ):
            return cls._open_embedded_session(connection, credentials)
        if (
            connection.state != ConnectionState.OPEN
            and isinstance(credentials, SparkIvmCredentials)
            and credentials.method == SparkConnectionMethod.THRIFT
        ):
            return cls._open_thrift(connection, credentials)
        return super().open(connection)

    @classmethod
    def _open_thrift(cls, connection: Connection, credentials: SparkIvmCredentials) -> Connection:
        """dbt-spark's thrift connection, with the server named when it cannot be reached and
        its catalog checked (once per server and process) for Iceberg."""
        address = f"{credentials.host}:{credentials.port}"
        try:
            connection = super().open(connection)
        except FailedToConnectError as exc:
            raise FailedToConnectError(
                f"spark_ivm: cannot reach the Spark Thrift server at {address} (method: thrift): "
                f"{getattr(exc, 'msg', exc)}. Is it running, and listening on that host and "
                "port (hive.server2.thrift.bind.host / hive.server2.thrift.port)? "
                f"{SERVER_HELP}."
            ) from exc
        # a session's own settings (server_side_parameters) may change what it sees
        key = (
            str(credentials.host),
            int(credentials.port),
            tuple(sorted((str(k), str(v)) for k, v in credentials.server_side_parameters.items())),
        )
        with _CHECK_LOCK:
            checked = key in _CHECKED_SERVERS
        if not checked:
            problem = _iceberg_problem(connection)
            if problem is not None:  # dbt closes the connection as after any failed open
                raise DbtRuntimeError(
                    f"spark_ivm: the Spark Thrift server at {address} {problem}. The ivm "
                    "materialization needs an Apache Iceberg catalog as the catalog two-part "
                    "names resolve in (Iceberg's SparkSessionCatalog as spark_catalog, or a "
                    "named org.apache.iceberg.spark.SparkCatalog made the default with "
                    "spark.sql.defaultCatalog) and Iceberg's SQL extensions, set when the "
                    "server starts (--conf spark.sql.catalog.spark_catalog="
                    "org.apache.iceberg.spark.SparkSessionCatalog --conf "
                    f"spark.sql.extensions={ICEBERG_EXTENSIONS}, the Iceberg runtime jar in "
                    f"--jars and --driver-class-path); {SERVER_HELP}."
                )
            cache = f"spark.sql.catalog.{_default_catalog(connection)}.cache-enabled"
            if _server_setting(connection, cache) != "false":
                logger.warning(
                    f"spark_ivm: the Spark Thrift server at {address} caches Iceberg tables per "
                    f"session ({cache} is not false): a connection that read an ivm "
                    "model may see it as it was before a refresh committed by another "
                    "connection, for up to 30 s. Start the server with "
                    f"--conf {cache}=false."
                )
            with _CHECK_LOCK:
                _CHECKED_SERVERS.add(key)
        return connection

    @classmethod
    def _open_embedded_session(
        cls, connection: Connection, credentials: SparkIvmCredentials
    ) -> Connection:
        """Start (or reuse) the embedded Spark, then let dbt-spark open its session connection.

        dbt-spark hands ``server_side_parameters`` to its session ``Connection``, which applies
        them to ``SparkSession.builder`` before every statement. The plugin's defaults are
        merged in there (user values win) on a copy of the credentials, so the profile's own
        values stay as the user wrote them.
        """
        ivm_home = _resolve_credentials_ivm_home(credentials)
        if ivm_home is None:
            raise DbtRuntimeError(
                "spark_ivm: cannot place the embedded Spark's files: the dbt project root is "
                "unknown (no dbt_project.yml in --project-dir, DBT_PROJECT_DIR or the current "
                "directory and its parents). Run dbt from the project or set an absolute "
                "`ivm_home` in the profile."
            )
        # Derby writes derby.log here before anything else exists.
        ivm_home.mkdir(parents=True, exist_ok=True)

        user_parameters: dict[str, str] = dict(credentials.server_side_parameters)
        parameters = embedded.session_parameters(ivm_home, user_parameters)
        logger.debug(f"spark_ivm: embedded Spark under {ivm_home}")
        runtime_parameters = embedded.ensure_session(parameters)

        # dbt-spark's open() reads everything from connection.credentials: give it a copy
        # whose server_side_parameters are the runtime-changeable subset of the merged
        # settings (the static ones took effect when the session was created, or cannot).
        connection.credentials = credentials.replace(server_side_parameters=runtime_parameters)
        try:
            return super().open(connection)
        finally:
            connection.credentials = credentials


def _server_setting(connection: Connection, key: str) -> str | None:
    """A Spark setting of the connection's server session (None when unset)."""
    cursor = connection.handle.cursor()
    cursor.execute(f"SET `{key}`")  # quoted: a key with a hyphen is a syntax error otherwise
    rows = cursor.fetchall() or []
    value = str(rows[0][1]).strip() if rows else ""
    return None if value in ("", "<undefined>") else value


def _default_catalog(connection: Connection) -> str:
    """The catalog the server's session resolves two-part names in."""
    return _server_setting(connection, "spark.sql.defaultCatalog") or SESSION_CATALOG


def _iceberg_problem(connection: Connection) -> str | None:
    """What keeps the server's session from being the Iceberg catalog ivm needs, or None."""
    name = _default_catalog(connection)
    catalog = _server_setting(connection, f"spark.sql.catalog.{name}")
    if catalog is None or not catalog.startswith(ICEBERG_CATALOG_PACKAGE):
        return (
            f"does not use Apache Iceberg as its default catalog {name} "
            f"(spark.sql.catalog.{name} is {catalog or 'unset: the built-in catalog'})"
        )
    extensions = _server_setting(connection, "spark.sql.extensions") or ""
    if ICEBERG_EXTENSIONS not in extensions:
        return (
            "has Iceberg's catalog but not its SQL extensions (spark.sql.extensions is "
            f"{extensions or 'unset'}), so MERGE INTO and Iceberg's procedures fail"
        )
    return None


def _resolve_credentials_ivm_home(
    credentials: SparkIvmCredentials, config: Any = None
) -> Path | None:
    """Make ``credentials.ivm_home`` absolute if the project root can be found; return it."""
    current = credentials.ivm_home
    if current and Path(current).expanduser().is_absolute():
        # Already resolved (or given absolute): no need to look for the project.
        return Path(current).expanduser().resolve()
    ivm_home = embedded.resolve_ivm_home(current, embedded.find_project_root(config))
    if ivm_home is not None:
        credentials.ivm_home = str(ivm_home)
    return ivm_home
