"""SQL for the tests' own setup and checks, on dbt connections of the profile the models run on.

A connection is opened by the plugin's own connection manager (`SparkIvmConnectionManager.open`)
from the profile's output, exactly as `dbt run` opens one: with `method: session` it is the
process's embedded Spark, with `method: thrift` a session on the Thrift server. So the same
test code runs against both, and nothing here imports pyspark.

Values are made the same in both: the Thrift protocol carries dates as text and arrays, maps
and structs as JSON text, the session as Python objects; `SqlConnection.query` turns dates into
`datetime.date` and JSON text into lists and dicts (a struct stays a dict; the session gives
a Row: compare structs only within one target).
"""

from __future__ import annotations

import datetime
import json
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: How a test Thrift server's Derby metastore fails a table lookup under concurrent sessions
#: (Iceberg's HiveTableOperations wraps the metastore's TException): seen once in ~500 checks
#: of a CI run, the same lookup answering a moment later. Only the tests' own reads retry it.
_TRANSIENT_METASTORE = "Failed to get table info from metastore"
_RETRIES = 3

#: Thrift type codes (PyHive's description) whose values arrive as JSON text.
_JSON_TYPES = {"ARRAY_TYPE", "MAP_TYPE", "STRUCT_TYPE"}


@dataclass(frozen=True)
class Column:
    """A result column: its name and Spark type as DESCRIBE prints it (`decimal(10,2)`)."""

    name: str
    type: str


def _normalise(value: Any, type_code: Any) -> Any:
    """One fetched cell as the Python value the session method would give."""
    if value is None:
        return None
    if type_code == "DATE_TYPE" and isinstance(value, str):
        try:
            return datetime.date.fromisoformat(value)
        except ValueError:  # years outside 1..9999 have no Python date
            return value
    if type_code in _JSON_TYPES and isinstance(value, str):
        return json.loads(value)
    return value


class SqlConnection:
    """Statements on dbt connections built from a profile output (one per thread).

    Args:
        output: the profile's output mapping as in profiles.yml (`type: spark_ivm`, ...).
    """

    def __init__(self, output: Mapping[str, Any]) -> None:
        from dbt.adapters.spark_ivm.connections import SparkIvmCredentials

        data = {k: v for k, v in output.items() if k not in ("type", "threads")}
        data = SparkIvmCredentials.translate_aliases(data)
        SparkIvmCredentials.validate(data)
        self.credentials = SparkIvmCredentials.from_dict(data)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: list[Any] = []

    @property
    def method(self) -> str:
        return str(self.credentials.method)

    def _handle(self) -> Any:
        """This thread's open dbt connection handle (opened on first use)."""
        handle = getattr(self._local, "handle", None)
        if handle is not None:
            return handle
        from dbt.adapters.contracts.connection import Connection, ConnectionState

        from dbt.adapters.spark_ivm.connections import SparkIvmConnectionManager

        connection = Connection(
            type="spark_ivm",
            name=f"tests-{threading.get_ident()}",
            credentials=self.credentials,
            state=ConnectionState.INIT,
        )
        connection = SparkIvmConnectionManager.open(connection)
        handle = connection.handle
        self._local.handle = handle
        with self._lock:
            self._open.append(handle)
        return handle

    def execute(self, statement: str) -> None:
        """A statement whose result is not read (DDL, DML: PyHive cannot fetch their empty
        result from Spark's Thrift server)."""
        self._handle().cursor().execute(statement)

    def run(self, statement: str) -> list[tuple[Any, ...]]:
        """Any statement; its rows if it returns any (DDL/DML: none, and none are fetched).

        A read that fails on a transient metastore lookup (`_TRANSIENT_METASTORE`) is retried
        up to `_RETRIES` times; any other error, and a DDL or DML statement, fails at once.
        """
        read = statement.lstrip().upper().startswith(("SELECT", "DESCRIBE", "SHOW", "WITH"))
        for attempt in range(1, _RETRIES + 1):
            try:
                return self._run_once(statement)
            except Exception as exc:
                if not read or attempt == _RETRIES or _TRANSIENT_METASTORE not in str(exc):
                    raise
                time.sleep(2 * attempt)
        raise AssertionError("unreachable")

    def _run_once(self, statement: str) -> list[tuple[Any, ...]]:
        cursor = self._handle().cursor()
        cursor.execute(statement)
        try:
            description = cursor.description
            rows = cursor.fetchall() or [] if description else []
        except TypeError:  # PyHive on Spark's Thrift server, a statement without a result set
            return []
        codes = [d[1] for d in description]
        return [tuple(_normalise(v, c) for v, c in zip(row, codes, strict=False)) for row in rows]

    def query(self, statement: str) -> list[tuple[Any, ...]]:
        """The rows of a query, values as the session method gives them."""
        return self.run(statement)

    def describe(self, select: str) -> list[Column]:
        """Names and Spark types of the columns `select` returns (`DESCRIBE QUERY`)."""
        return [Column(str(r[0]), str(r[1])) for r in self.query(f"DESCRIBE QUERY {select}")]

    def exists(self, relation: str) -> bool:
        """Whether `schema.name` is a table or view."""
        schema, _, name = relation.rpartition(".")
        if not schema:
            raise ValueError(f"relation without schema: {relation}")
        try:
            rows = self.query(f"SHOW TABLES IN {schema} LIKE '{name}'")
        except Exception:  # noqa: BLE001 - the schema itself is missing
            return False
        return any(str(r[1]).lower() == name.lower() for r in rows)

    def close(self) -> None:
        """Close every connection opened so far."""
        with self._lock:
            handles, self._open = self._open, []
        errors = []
        for handle in handles:
            try:
                handle.close()
            except Exception as exc:  # noqa: BLE001 - close the others anyway
                errors.append(exc)
        self._local = threading.local()
        if errors:
            raise errors[0]


def run_all(conn: SqlConnection, statements: Sequence[str]) -> None:
    """Execute statements in order."""
    for statement in statements:
        conn.execute(statement)
