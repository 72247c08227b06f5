"""When the embedded Spark dies mid-run, the statements after it say so and why.

A model's statement exits the embedded Spark's JVM with code 52, the code Spark itself exits
with on `java.lang.OutOfMemoryError` (`java_method('java.lang.System', 'exit', 52)` runs in
the driver's task thread, as a task that ran out of heap would). The dbt process then holds a
pyspark session whose JVM is gone: before `jvm_exit.py`, every later statement failed with
py4j's `Connection refused`. In a process of its own (this test process's Spark must live).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from support.small_project import SmallProject

SCRIPT = textwrap.dedent(
    """
    import json, sys
    from dbt.cli.main import dbtRunner

    root = sys.argv[1]
    runner = dbtRunner()
    args = ["--project-dir", root, "--profiles-dir", root]
    messages = {}
    for select in ("a_exit", "b_after"):
        result = runner.invoke(["run", "--threads", "1", "-s", select, *args])
        for r in (result.result.results if result.result else []):
            messages[r.node.name] = str(r.message)
        if result.exception is not None:
            messages[select] = str(result.exception)
    print("MESSAGES " + json.dumps(messages))
    """
)


def test_statements_after_the_embedded_spark_stopped_say_why(tmp_path: Path) -> None:
    project = SmallProject(tmp_path / "p", "stopped", "ivm_stopped", target="session")
    (project.root / "models" / "a_exit.sql").write_text(
        "{{ config(materialized='table') }}\n"
        "select java_method('java.lang.System', 'exit', 52) as gone"
    )
    (project.root / "models" / "b_after.sql").write_text(
        "{{ config(materialized='table') }}\nselect 1 as k"
    )
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(project.root)],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=project.root,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("MESSAGES ")), None)
    assert line is not None, done.stdout[-3000:] + done.stderr[-3000:]
    messages = json.loads(line.removeprefix("MESSAGES "))
    after = messages.get("b_after", "")
    assert "the embedded Spark stopped" in after, messages
    assert "ran out of memory" in after and "spark.driver.memory" in after, messages
    assert "Connection refused" not in after, messages
