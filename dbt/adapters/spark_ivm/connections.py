"""Credentials and connection manager of the spark_ivm adapter.

Everything dbt-spark supports keeps working unchanged; the one addition is that
``method: session`` starts a self-contained local Spark with Apache Iceberg whose warehouse,
Derby metastore and ``derby.log`` live under ``ivm_home`` (see :mod:`.embedded`).
"""

from __future__ import annotations

from collections.abc import Iterable
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
from dbt.adapters.spark.connections import (
    SparkConnectionManager,
    SparkConnectionMethod,
    SparkCredentials,
)
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.spark_ivm import embedded

logger = AdapterLogger("SparkIvm")


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
        return super().open(connection)

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
