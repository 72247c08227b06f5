"""The check that a cluster's driver and executors share the warehouse (``method: session``
with a cluster master)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.spark_ivm.java_classes import java_class

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def check_warehouse_shared(session: SparkSession, master: str) -> None:
    """Fail clearly unless an executor can read a file the driver wrote into the warehouse.

    With a cluster master the driver (this process) commits Iceberg metadata and the executors
    write and read the data files, all under ``spark.sql.warehouse.dir``; on a folder only the
    driver's machine has (the default under ``ivm_home``), tables break in obscure ways. The
    check writes one small file there from the driver and counts its lines in a Spark job,
    which runs on the executors; then deletes it.
    """
    import uuid

    warehouse = session.conf.get("spark.sql.warehouse.dir")
    folder = f"{warehouse.rstrip('/')}/_spark_ivm_shared_check_{uuid.uuid4().hex}"
    hadoop_path = java_class(session, "org.apache.hadoop.fs.Path")
    fs = hadoop_path(folder).getFileSystem(session._jsparkSession.sessionState().newHadoopConf())
    out = fs.create(hadoop_path(f"{folder}/marker.txt"), True)
    out.writeBytes("written by the driver\n")
    out.close()
    try:
        lines = session.sql(f"SELECT count(*) FROM text.`{folder}`").collect()[0][0]
    except Exception as exc:  # any failure of the executors' read is the answer
        session.stop()  # the next connection creates the session again and checks again
        cause = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        raise DbtRuntimeError(
            f"spark_ivm: the warehouse {warehouse} is not shared between the driver and the "
            f"executors of {master}: an executor could not read a file the driver wrote there "
            f"({cause}). Set spark.sql.warehouse.dir in the profile's server_side_parameters to "
            "a location every node sees (hdfs://, s3a://, a shared mount), or use method: "
            "thrift with a server on the cluster."
        ) from exc
    finally:
        fs.delete(hadoop_path(folder), True)
    if lines != 1:
        session.stop()
        raise DbtRuntimeError(
            f"spark_ivm: the warehouse {warehouse} is not shared between the driver and the "
            f"executors of {master}: they read {lines} lines of a one-line file the driver "
            "wrote there."
        )
