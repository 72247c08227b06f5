"""The Apache Iceberg runtime jar the embedded Spark loads: found at run time in the installed
``snowpark-connect-deps-iceberg`` package, the one built for pyspark's Spark and Scala."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from dbt_common.exceptions import DbtRuntimeError

#: PyPI package (``snowpark-connect-deps-iceberg``) that ships the Apache Iceberg runtime jars.
ICEBERG_JARS_PACKAGE = "snowpark_connect_deps_iceberg"


def _spark_and_scala_versions() -> tuple[str, str]:
    """(``major.minor`` of pyspark, Scala binary version of its jars), e.g. ("3.5", "2.12")."""
    import pyspark

    spark_version = ".".join(pyspark.__version__.split(".")[:2])
    scala_version = "2.12"  # what every pyspark 3.x wheel on PyPI is built with
    jars_dir = Path(pyspark.__file__).parent / "jars"
    for jar in jars_dir.glob("scala-library-*.jar"):
        match = re.match(r"scala-library-(\d+\.\d+)\.", jar.name)
        if match:
            scala_version = match.group(1)
    return spark_version, scala_version


def _version_key(name: str) -> tuple[int, ...]:
    """Sort key for the Iceberg version at the end of a jar name (``...-1.10.2.jar``)."""
    match = re.search(r"-(\d+(?:\.\d+)*)\.jar$", name)
    return tuple(int(part) for part in match.group(1).split(".")) if match else ()


def find_iceberg_runtime_jar() -> Path:
    """Path of the Iceberg Spark runtime jar matching the installed pyspark.

    Looked up at run time inside the installed ``snowpark_connect_deps_iceberg`` package
    (never a hard-coded path), choosing the jar built for pyspark's Spark and Scala versions.
    """
    spark_version, scala_version = _spark_and_scala_versions()
    prefix = f"iceberg-spark-runtime-{spark_version}_{scala_version}-"
    try:
        jars_dir = resources.files(ICEBERG_JARS_PACKAGE) / "jars"
    except ModuleNotFoundError as exc:
        raise DbtRuntimeError(
            "spark_ivm: the embedded Spark needs the Apache Iceberg runtime jar from the "
            "package snowpark-connect-deps-iceberg (pip install "
            "'snowpark-connect-deps-iceberg==1.0.2'; on Python 3.13, which its wheel does not "
            "declare, add --no-deps --ignore-requires-python), or set spark.jars in the "
            "profile's server_side_parameters."
        ) from exc
    jars = sorted(
        (entry for entry in jars_dir.iterdir() if entry.name.startswith(prefix)),
        key=lambda entry: _version_key(entry.name),
    )
    if not jars:
        raise DbtRuntimeError(
            f"spark_ivm: no {prefix}*.jar in {jars_dir}; the installed "
            "snowpark-connect-deps-iceberg does not fit pyspark "
            f"{spark_version} (Scala {scala_version})."
        )
    # The package is installed as plain files, so the Traversable is a real filesystem path;
    # Spark needs a path it can open itself.
    return Path(str(jars[-1]))
