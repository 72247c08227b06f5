"""metastore lock: one process at a time on an embedded metastore, and a second told by whom.

The embedded Spark keeps its catalog in a Derby database under `ivm_home`, which Derby lets one
process open. A second dbt process on the same `ivm_home` (two `dbt run`s at once, an
orchestrator's retry beside a run still going) started a JVM of its own and failed half a
minute later with "Unable to instantiate SessionHiveMetaStoreClient" and a Derby stack trace.

So before the JVM starts the process takes an exclusive lock on `<database>.owner` beside the
Derby database and writes there who it is; the operating system releases the lock when the
process ends, however it ends (a SIGKILL included), so no stale lock outlives its owner. A second
process finds the lock held and fails at once with `MetastoreInUse`, naming the first. A
metastore that is not an embedded Derby database (`spark.hadoop.hive.metastore.uris`, another
JDBC URL) takes no lock: it serves several processes itself.

    >>> derby_database({"spark.hadoop.javax.jdo.option.ConnectionURL":
    ...     "jdbc:derby:;databaseName=/p/.spark_ivm/metastore_db;create=true"})
    PosixPath('/p/.spark_ivm/metastore_db')
    >>> derby_database({"spark.hadoop.javax.jdo.option.ConnectionURL": "jdbc:derby:;databaseName=/m",
    ...     "spark.hadoop.hive.metastore.uris": "thrift://hms:9083"}) is None
    True
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from dbt_common.exceptions import DbtRuntimeError

try:
    import fcntl
except ImportError:  # not POSIX: Derby's own error is what a second process gets
    fcntl = None  # type: ignore[assignment]

CONNECTION_URL = "spark.hadoop.javax.jdo.option.ConnectionURL"
METASTORE_URIS = "spark.hadoop.hive.metastore.uris"
_DERBY = "jdbc:derby:;databaseName="

# The locks this process holds, by database: kept open for the life of the process.
_HELD: dict[Path, IO[str]] = {}


class MetastoreInUse(DbtRuntimeError):
    """Another process has the embedded metastore open."""


def derby_database(parameters: Mapping[str, str]) -> Path | None:
    """The embedded Derby database the session's metastore opens (None: another metastore)."""
    url = str(parameters.get(CONNECTION_URL, ""))
    if parameters.get(METASTORE_URIS) or not url.startswith(_DERBY):
        return None
    return Path(url[len(_DERBY) :].split(";", 1)[0])


def hold(database: Path) -> None:
    """Take this process's lock on `database` (once; kept until the process ends), or raise
    `MetastoreInUse` naming the process that holds it."""
    database = database.resolve()
    if fcntl is None or database in _HELD:
        return
    database.parent.mkdir(parents=True, exist_ok=True)
    handle = (database.parent / f"{database.name}.owner").open("a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        owner = handle.read().strip() or "a process that did not say which"
        handle.close()
        raise MetastoreInUse(
            f"the embedded Spark's metastore {database} is in use by another process "
            f"({owner}). Derby, its database, lets one process open it: wait for that run "
            "to end, give this one its own `ivm_home` in the profile, or run both through a "
            "Spark Thrift server (`method: thrift`), which serves concurrent runs."
        ) from None
    handle.seek(0)
    handle.truncate()
    command = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    handle.write(f"pid {os.getpid()}, `{command[:200]}`, since {started}\n")
    handle.flush()
    _HELD[database] = handle


def held() -> bool:
    """Does this process hold an embedded metastore's lock (`hold`)? Then no other process
    opens that metastore, nor commits to the tables it registers."""
    return bool(_HELD)
