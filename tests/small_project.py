"""A throwaway dbt project on the shared in-process Spark, for tests that need their own models."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from dbt.cli.main import dbtRunner


class SmallProject:
    """`dbt_project.yml` + `profiles.yml` (type spark_ivm, session) in `root`, models written by
    the test; dbt runs in-process, SQL for setup and checks goes to the process's Spark."""

    def __init__(self, root: Path, name: str, schema: str) -> None:
        self.root = root
        self.runner = dbtRunner()
        (root / "models").mkdir(parents=True, exist_ok=True)
        (root / "dbt_project.yml").write_text(
            f"name: {name}\nversion: '1.0'\nconfig-version: 2\nprofile: {name}\n"
        )
        (root / "profiles.yml").write_text(
            f"{name}:\n  target: dev\n  outputs:\n    dev:\n      type: spark_ivm\n"
            f"      method: session\n      host: localhost\n      schema: {schema}\n"
            # Several models refresh at once, as in the harness (and in users' projects).
            "      threads: 4\n"
            f"      ivm_home: {root / '.spark_ivm'}\n"
        )

    def start_spark(self) -> None:
        """Let dbt start the process's Spark (`dbt debug`) unless it runs already, so that setup
        SQL goes to the session the adapter configured (an in-process suite starts it once)."""
        from pyspark import SparkContext

        if SparkContext._active_spark_context is None:
            result = self.dbt("debug")
            assert result.success, f"dbt debug failed: {result.exception}"

    def model(self, name: str, select: str) -> None:
        (self.root / "models" / f"{name}.sql").write_text(
            "{{ config(materialized='ivm') }}\n" + select
        )

    def dbt(self, *args: str):
        return self.runner.invoke(
            [*args, "--project-dir", str(self.root), "--profiles-dir", str(self.root)]
        )

    def sql(self, statement: str) -> list[tuple]:
        from pyspark.sql import SparkSession

        return [tuple(r) for r in SparkSession.builder.getOrCreate().sql(statement).collect()]

    def bag(self, statement: str) -> Counter:
        return Counter(self.sql(statement))
