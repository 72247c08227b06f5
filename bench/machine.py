"""The machine, versions and date a benchmark run records beside its figures."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dbt.adapters.spark_ivm.java_classes import java_class

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REPO_DIR = Path(__file__).resolve().parent.parent


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _memory_gib() -> float:
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    return 0.0


def _git_commit() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO_DIR,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "dbt", "macros"],
            cwd=REPO_DIR,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head}{' + uncommitted plugin changes' if dirty else ''}"


def environment(spark: SparkSession) -> dict[str, Any]:
    """Machine, versions and date of this run."""
    iceberg = java = "unknown"
    with contextlib.suppress(Exception):
        iceberg = str(java_class(spark, "org.apache.iceberg.IcebergBuild").version())
    with contextlib.suppress(Exception):
        java = str(java_class(spark, "java.lang.System").getProperty("java.version"))
    versions = {"python": platform.python_version(), "java": java, "spark": spark.version}
    versions["iceberg"] = iceberg
    for package in ("dbt-core", "dbt-spark", "dbt-spark-ivm", "sqlglot", "pyspark"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[package] = metadata.version(package)
    versions["plugin_commit"] = _git_commit()
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpu": _cpu_model(),
            "cores": os.cpu_count(),
            "memory_gib": _memory_gib(),
            "os": platform.platform(),
            "spark_master": spark.conf.get("spark.master", "?"),
            "driver_memory": spark.conf.get("spark.driver.memory", "?"),
        },
        "versions": versions,
    }
