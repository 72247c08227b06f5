"""Spark settings of every Spark the suite starts, beside the plugin's own.

The suite's tables hold tens of rows. On such data compiling each new plan to Java (whole-stage
and expression code generation) and then JIT-compiling the generated classes costs more than
running the plan interpreted, and every refresh statement is a new plan. The differential
harness alone (seed 475865, 81 families, 5 rounds, one process): 815 s wall and 1156 s of
JVM CPU with code generation, 699 s and 961 s without (2026-12-03). Results do not depend on
the mode; the benchmark runs Spark's defaults, so generated code keeps its equality checks
there (`bench/`).

The test processes' embedded sessions, and the dbt processes they start, take the settings
through pyspark's launcher (`PYSPARK_SUBMIT_ARGS`, set by conftest unless already set); the
loopback Thrift server through its own `--conf`s (`support/cluster.py`).
"""

from __future__ import annotations

import os

#: Interpreted expressions and no whole-stage code generation.
SUITE_SPARK_SETTINGS: dict[str, str] = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}

#: pyspark's launcher reads its spark-submit arguments from this variable.
SUBMIT_ARGS_ENV = "PYSPARK_SUBMIT_ARGS"


def submit_args() -> str:
    """`PYSPARK_SUBMIT_ARGS` that start a pyspark driver with the suite's settings.

    >>> submit_args().split()[:2]
    ['--conf', 'spark.sql.codegen.wholeStage=false']
    >>> submit_args().endswith(' pyspark-shell')
    True
    """
    confs = " ".join(f"--conf {key}={value}" for key, value in SUITE_SPARK_SETTINGS.items())
    return f"{confs} pyspark-shell"


def apply_to_launcher() -> None:
    """Make every pyspark driver this process (or a child) starts take the suite's settings,
    unless the caller set `PYSPARK_SUBMIT_ARGS` itself."""
    os.environ.setdefault(SUBMIT_ARGS_ENV, submit_args())
