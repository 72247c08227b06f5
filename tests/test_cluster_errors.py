"""A cluster user's error: a warehouse the executors cannot see fails the first connection
with a message that says so and what to set (issue 14, item 5).

On one machine every executor sees the driver's folders, so the executors' failed read is
the one stand-in here (an error path): the real session writes the marker file and the real
check runs; only the executors' read of it fails as it does on a cluster whose nodes do not
share the folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.small_project import SmallProject

from dbt.adapters.spark_ivm.warehouse_check import check_warehouse_shared


class _ExecutorsCannotRead:
    """The process's SparkSession, except that a job reading the warehouse fails."""

    def __init__(self, session) -> None:
        self._session = session
        self.stopped = False
        self.read: list[str] = []

    def __getattr__(self, name: str):
        return getattr(self._session, name)

    def sql(self, statement: str):
        self.read.append(statement)
        raise RuntimeError(
            "java.io.FileNotFoundException: File file:/driver-only/warehouse does not exist"
        )

    def stop(self) -> None:
        self.stopped = True  # the shared session keeps serving the other tests


def test_a_warehouse_the_executors_cannot_see_is_a_clear_error(tmp_path: Path):
    SmallProject(tmp_path, "warehouse_check", "ivm_wh_check", target="session").start_spark()
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    assert session is not None
    fake = _ExecutorsCannotRead(session)
    with pytest.raises(Exception) as caught:
        check_warehouse_shared(fake, "spark://cluster:7077")
    message = str(caught.value)
    assert "is not shared between the driver and the executors of spark://cluster:7077" in message
    assert "FileNotFoundException" in message and "spark.sql.warehouse.dir" in message
    assert fake.stopped, "the session was kept: the next connection would not check again"
    # The marker the driver wrote is gone again.
    warehouse = session.conf.get("spark.sql.warehouse.dir").removeprefix("file:")
    assert not list(Path(warehouse).glob("_spark_ivm_shared_check_*"))

    # And on this machine, where the folder is shared, the real check passes.
    check_warehouse_shared(session, "local[2]")
