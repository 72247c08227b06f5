"""A throwaway dbt project for tests that need their own models.

It runs on the target `IVM_TEST_TARGET` names (`targets.py`: the process's embedded Spark by
default, or a Thrift server); dbt runs in-process, and the test's own SQL (setup and checks)
goes through a dbt connection of the same profile, so the same test runs on both.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dbt.cli.main import dbtRunner
from ivm_harness.connection import SqlConnection

from support.targets import default_target, profile_output


class SmallProject:
    """`dbt_project.yml` + `profiles.yml` (type spark_ivm) in `root`, models written by the test.

    Args:
        root: the project folder.
        name: project and profile name.
        schema: the models' schema.
        target: `session`, `thrift` or `thrift://host:port` (default: `IVM_TEST_TARGET`).
    """

    def __init__(self, root: Path, name: str, schema: str, target: str | None = None) -> None:
        self.root = root
        self.target = target or default_target()
        self.runner = dbtRunner()
        (root / "models").mkdir(parents=True, exist_ok=True)
        (root / "dbt_project.yml").write_text(
            f"name: {name}\nversion: '1.0'\nconfig-version: 2\nprofile: {name}\n"
        )
        # Several models refresh at once, as in the harness (and in users' projects).
        self.output: dict[str, Any] = profile_output(
            self.target, schema, root / ".spark_ivm", threads=4
        )
        profile = {name: {"target": "dev", "outputs": {"dev": self.output}}}
        (root / "profiles.yml").write_text(json.dumps(profile, indent=2) + "\n")
        self._conn: SqlConnection | None = None

    @property
    def conn(self) -> SqlConnection:
        """SQL on a dbt connection of this project's profile (opened on first use)."""
        if self._conn is None:
            self._conn = SqlConnection(self.output)
        return self._conn

    def start_spark(self) -> None:
        """Open the project's connection: with `method: session` this starts the process's
        Spark as the adapter configures it (an in-process suite starts it once)."""
        self.conn.query("SELECT 1")

    def model(self, name: str, select: str) -> None:
        (self.root / "models" / f"{name}.sql").write_text(
            "{{ config(materialized='ivm') }}\n" + select
        )

    def dbt(self, *args: str, callbacks: list[Callable[[Any], None]] | None = None):
        """`dbt <args>` on the project; `callbacks` get each of the run's events."""
        runner = self.runner if callbacks is None else dbtRunner(callbacks=callbacks)
        return runner.invoke(
            [*args, "--project-dir", str(self.root), "--profiles-dir", str(self.root)]
        )

    def operation(self, macro: str, args: str = "{}") -> tuple[bool, list[str]]:
        """`dbt run-operation macro --args args`: (success, the lines it printed)."""
        printed: list[str] = []

        def keep(event) -> None:
            if event.info.name == "PrintEvent":
                printed.append(event.data.msg)

        result = self.dbt("run-operation", macro, "--args", args, callbacks=[keep])
        return result.success, printed

    def sql(self, statement: str) -> list[tuple]:
        """Run any statement on the project's dbt connection; its rows, if it returns any."""
        return self.conn.run(statement)

    def started(self) -> SmallProject:
        """The project with its Spark started and its schema created (what every module's
        `project` fixture does first)."""
        self.start_spark()
        self.sql(f"CREATE DATABASE IF NOT EXISTS {self.output['schema']}")
        return self

    def base_table(self, name: str, columns: str, *rows: str) -> str:
        """(Re)create the Iceberg table `name` of the project's schema with `columns`
        (`"k string, x int"`) and `rows` (SQL VALUES tuples, one commit); its full name."""
        relation = f"{self.output['schema']}.{name}"
        self.sql(f"DROP TABLE IF EXISTS {relation}")
        self.sql(f"CREATE TABLE {relation} ({columns}) USING iceberg")
        if rows:
            self.sql(f"INSERT INTO {relation} VALUES {', '.join(rows)}")
        return relation

    def bag(self, statement: str) -> Counter:
        return Counter(self.sql(statement))

    def run(self, *args: str) -> dict[str, str]:
        """`dbt run` with `args`; each model's result message by name. Fails if dbt fails."""
        result = self.dbt("run", *args)
        results = result.result.results if result.result else []
        messages = {r.node.name: str(r.message) for r in results}
        assert result.success, f"dbt run failed: {messages} {result.exception}"
        return messages

    def check_models(self, models: Sequence[str]) -> None:
        """Each model's relation equals a fresh run of its compiled SQL (as bags), and its
        `ivm_consistent` tests pass (`dbt test --select models`)."""
        name = yaml_name(self.root)
        for model in models:
            compiled = self.root / "target" / "compiled" / name / "models" / f"{model}.sql"
            got, want = (
                self.bag(f"SELECT * FROM {self.output['schema']}.{model}"),
                self.bag(compiled.read_text()),
            )
            assert got == want, (
                f"{model}: relation {sorted(got.items(), key=str)} != "
                f"SQL {sorted(want.items(), key=str)}"
            )
        result = self.dbt("test", "--select", *models)
        assert result.success, [str(r.message) for r in result.result.results]


class DbtRun:
    """One `dbt run` (or `dbt <command>` with `command=`) of `p`: its success, each model's
    message and adapter_response, the warnings dbt emitted. Does not fail by itself."""

    def __init__(self, p: SmallProject, *args: str, command: str = "run") -> None:
        self.warnings: list[str] = []

        def keep(event: Any) -> None:
            if event.info.level == "warn":
                self.warnings.append(str(event.info.msg))

        result = dbtRunner(callbacks=[keep]).invoke(
            [command, *args, "--project-dir", str(p.root), "--profiles-dir", str(p.root)]
        )
        self.success = bool(result.success)
        results = result.result.results if result.result else []
        self.messages = {r.node.name: str(r.message) for r in results}
        self.responses = {r.node.name: dict(r.adapter_response) for r in results}


def yaml_name(root: Path) -> str:
    """The project name in `root`'s dbt_project.yml (the compiled SQL's folder)."""
    for line in (root / "dbt_project.yml").read_text().splitlines():
        if line.startswith("name:"):
            return line.split(":", 1)[1].strip().strip("'\"")
    raise ValueError(f"no name in {root / 'dbt_project.yml'}")
