"""Why the embedded Spark stopped, said instead of py4j's `Connection refused`.

The embedded Spark is a JVM that pyspark launched as a child of the dbt process. When it
exits (a task ran it out of heap, the kernel's out-of-memory killer took it), pyspark does not
notice: its session object stays, and every later statement of the run fails with py4j's
`Connection refused`, which says nothing of the cause. The JVM's exit code does:

    52   Spark's own exit on java.lang.OutOfMemoryError (SparkExitCode.OOM)
    -9   SIGKILL (137 from a shell): on Linux mostly the kernel's out-of-memory killer
    -15  SIGTERM (143 from a shell)

    >>> explain(52, "4g").split(". ")[0]
    'spark_ivm: the embedded Spark stopped: its JVM ran out of memory (java.lang.OutOfMemoryError; Spark exits with code 52)'
"""

from __future__ import annotations

from typing import Any

#: A stopped JVM's exit code -> what stopped it (Popen gives a signal as its negative).
EXIT_CAUSES = {
    52: "ran out of memory (java.lang.OutOfMemoryError; Spark exits with code 52)",
    -9: "was killed (SIGKILL; on Linux mostly the kernel's out-of-memory killer)",
    137: "was killed (SIGKILL; on Linux mostly the kernel's out-of-memory killer)",
    -15: "was terminated (SIGTERM)",
    143: "was terminated (SIGTERM)",
}
#: Exit codes that point at memory (the advice then names the driver's heap).
MEMORY_CODES = (52, -9, 137)


def explain(code: int, driver_memory: str | None) -> str:
    """The error a statement gets once the embedded Spark's JVM exited with `code`."""
    cause = EXIT_CAUSES.get(code, f"exited with code {code}")
    advice = ""
    if code in MEMORY_CODES:
        advice = (
            " If it ran out of memory, give the driver more heap "
            f"(server_side_parameters: spark.driver.memory, now {driver_memory or 'unset'}) "
            "or run fewer models at once (--threads)."
        )
    return (
        f"spark_ivm: the embedded Spark stopped: its JVM {cause}. Every statement after that "
        "fails, and this dbt process cannot start it again. Run dbt again: each ivm model "
        "refreshes from its last committed state." + advice
    )


def _driver_process() -> Any:
    """pyspark's handle on the JVM it launched (None: no embedded Spark in this process)."""
    try:
        from pyspark import SparkContext
    except ImportError:
        return None
    gateway = SparkContext._gateway
    return getattr(gateway, "proc", None) if gateway is not None else None


def stopped() -> str | None:
    """The error to give if this process's embedded Spark has stopped, else None."""
    process = _driver_process()
    if process is None:
        return None
    code = process.poll()
    return None if code is None else explain(code, _launched["driver_memory"])


def launched_with(driver_memory: str | None) -> None:
    """Remember the heap the embedded Spark was started with (its JVM cannot be asked once
    it has stopped)."""
    _launched["driver_memory"] = driver_memory


_launched: dict[str, str | None] = {"driver_memory": None}
