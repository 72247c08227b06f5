"""Two processes on one embedded metastore: the second fails at once and names the first
(`metastore_lock.py`); a killed owner leaves no lock behind.

Derby, the embedded metastore's database, lets one process open it. Without the lock a second
`dbt run` on the same `ivm_home` started a JVM and failed half a minute later with "Unable to
instantiate SessionHiveMetaStoreClient"."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.small_project import SmallProject
from support.targets import SESSION, default_target

from dbt.adapters.spark_ivm import metastore_lock

HOLDER = """
import sys, time
from pathlib import Path
from dbt.adapters.spark_ivm import metastore_lock
metastore_lock.hold(Path(sys.argv[1]))
print("held", flush=True)
time.sleep(600)
"""


def test_a_second_process_is_told_who_holds_the_metastore(tmp_path: Path) -> None:
    database = tmp_path / "home" / "metastore_db"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(database)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(metastore_lock.MetastoreInUse) as refused:
            metastore_lock.hold(database)
        message = str(refused.value)
        assert f"pid {holder.pid}" in message and str(database) in message, message
        assert "ivm_home" in message and "method: thrift" in message, message
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # Killed, however abruptly: the lock went with it.
    metastore_lock.hold(database)


@pytest.mark.skipif(default_target() != SESSION, reason="the embedded metastore: session only")
def test_a_second_dbt_run_on_the_same_ivm_home_fails_at_once_naming_the_first(
    tmp_path: Path,
) -> None:
    """This process's embedded Spark holds its metastore; a `dbt run` in another process on
    the same `ivm_home` fails before starting a JVM, naming this process."""
    p = SmallProject(tmp_path, "lock_second", "lock_second").started()
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    assert session is not None
    url = session.sparkContext.getConf().get(metastore_lock.CONNECTION_URL)
    database = metastore_lock.derby_database({metastore_lock.CONNECTION_URL: url})
    assert database is not None, url
    p.output["ivm_home"] = str(database.parent)
    profile = {"lock_second": {"target": "dev", "outputs": {"dev": p.output}}}
    (tmp_path / "profiles.yml").write_text(json.dumps(profile))
    p.model("m", "select 1 as one")
    start = time.monotonic()
    second = subprocess.run(
        [sys.executable, "-m", "dbt.cli.main", "run", "--project-dir", str(tmp_path),
         "--profiles-dir", str(tmp_path)],
        check=False, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    seconds = time.monotonic() - start
    output = second.stdout + second.stderr
    assert second.returncode != 0, output[-2000:]
    assert f"is in use by another process (pid {os.getpid()}" in output, output[-2000:]
    assert "SessionHiveMetaStoreClient" not in output, output[-2000:]
    print(f"the second run failed after {seconds:.1f} s")
