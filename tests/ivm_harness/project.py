"""The generated dbt project of the harness, and in-process dbt invocations.

dbt runs inside the test process (`dbtRunner`). In session mode the SparkSession that the adapter
creates is a process singleton shared by every invocation and by the harness's own SQL
connection; with `method: thrift` all of them are sessions of the Thrift server.
"""

from __future__ import annotations

import glob
import json
import os
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import REBUILT_VAR
from .spec import Family, Table

PROJECT_NAME = "ivm_harness"


@dataclass(frozen=True)
class ModelResult:
    """Outcome of one model in one `dbt run`."""

    name: str
    status: str
    message: str
    compiled_sql: str | None
    relation: str
    seconds: float = 0.0


@dataclass(frozen=True)
class InvocationResult:
    """Outcome of one dbt invocation: overall success, per-model results, the exception."""

    success: bool
    models: dict[str, ModelResult]
    error: str | None


def iceberg_jar() -> str:
    """The Iceberg Spark runtime jar shipped by `snowpark-connect-deps-iceberg` (Scala 2.12)."""
    import snowpark_connect_deps_iceberg as pkg

    pattern = os.path.join(
        os.path.dirname(pkg.__file__), "jars", "iceberg-spark-runtime-3.5_2.12-*.jar"
    )
    jars = sorted(glob.glob(pattern))
    if not jars:
        raise FileNotFoundError(f"no Iceberg runtime jar matches {pattern}")
    return jars[-1]


def plain_spark_parameters(home: Path) -> dict[str, str]:
    """The embedded session's catalog settings, for bring-up with dbt-spark's own `type: spark`."""
    return {
        "spark.master": "local[2]",
        "spark.jars": iceberg_jar(),
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        "spark.sql.catalog.spark_catalog": "org.apache.iceberg.spark.SparkSessionCatalog",
        "spark.sql.catalog.spark_catalog.type": "hive",
        "spark.hadoop.iceberg.engine.hive.lock-enabled": "false",
        "spark.hadoop.hive.metastore.schema.verification": "false",
        "spark.sql.warehouse.dir": str(home / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true"
        ),
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "4",
    }


def _yaml(obj: Any) -> str:
    """YAML text of `obj` (JSON is valid YAML, and needs no extra dependency)."""
    return json.dumps(obj, indent=2) + "\n"


def rebuilt_config(model: str) -> str:
    """The config argument that gives `model` `ivm_refresh=full` in a run whose
    `REBUILT_VAR` lists it (`config.rebuilt_models`), and leaves it unset (the environment's
    policy, `incremental` in the suite) otherwise.

    >>> rebuilt_config("agg")
    ", ivm_refresh=('full' if 'agg' in var('ivm_harness_rebuilt', []) else none)"
    """
    return f", ivm_refresh=('full' if {model!r} in var({REBUILT_VAR!r}, []) else none)"


def _jinja_literal(value: Any) -> str:
    """A Jinja literal for a config value (strings, numbers, booleans, lists, dicts)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value)


class DbtProject:
    """A dbt project in a directory, holding one model per family and a `base` source.

    Args:
        root: project directory (also holds profiles.yml, target/ and logs/).
        families: the families whose models the project holds.
        tables: the base tables (the `base` source).
        materialization: the materialization of every model (`ivm`; `table` for bring-up).
        adapter_type: `spark_ivm` (default), or `spark` for bring-up before the plugin exists.
        target_schema: schema of the models.
        base_schema: schema of the base tables.
        ivm_home: the plugin's home directory (warehouse and metastore).
        threads: dbt threads.
        output: the profile output to use instead of the embedded session one (e.g.
            `method: thrift`, from `targets.profile_output`); `schema` and `threads` as above.
    """

    def __init__(
        self,
        root: Path,
        families: Sequence[Family],
        tables: Sequence[Table],
        *,
        materialization: str,
        adapter_type: str,
        target_schema: str,
        base_schema: str,
        ivm_home: Path,
        threads: int,
        output: dict[str, Any] | None = None,
    ) -> None:
        """Remember the layout; call `write()` to create the files."""
        self.root = root
        self.families = list(families)
        self.tables = list(tables)
        self.materialization = materialization
        self.adapter_type = adapter_type
        self.target_schema = target_schema
        self.base_schema = base_schema
        self.ivm_home = ivm_home
        self.threads = threads
        self.output = output

    # ---------------------------------------------------------------------------- files

    def profile_output(self) -> dict[str, Any]:
        """The profile's one output (what the models and the harness's own SQL connect with)."""
        if self.output is not None:
            return {**self.output, "schema": self.target_schema, "threads": self.threads}
        output: dict[str, Any] = {
            "type": self.adapter_type,
            "method": "session",
            "host": "localhost",
            "schema": self.target_schema,
            "threads": self.threads,
        }
        if self.adapter_type == "spark_ivm":
            output["ivm_home"] = str(self.ivm_home)
        else:
            output["server_side_parameters"] = plain_spark_parameters(self.ivm_home)
        return output

    def profile(self) -> dict[str, Any]:
        """The profiles.yml content."""
        return {PROJECT_NAME: {"target": "dev", "outputs": {"dev": self.profile_output()}}}

    def model_sql(self, family: Family) -> str:
        """The model file of a family: a config() line and the SELECT."""
        config = {"materialized": self.materialization, **family.config}
        args = ", ".join(f"{k}={_jinja_literal(v)}" for k, v in config.items())
        if self.materialization == "ivm" and "ivm_refresh" not in config:
            args += rebuilt_config(family.name)
        return f"{{{{ config({args}) }}}}\n{textwrap.dedent(family.sql).strip()}\n"

    def write(self) -> None:
        """Write dbt_project.yml, profiles.yml, sources, models and the harness macros."""
        (self.root / "models").mkdir(parents=True, exist_ok=True)
        (self.root / "macros").mkdir(parents=True, exist_ok=True)
        project = {
            "name": PROJECT_NAME,
            "version": "1.0",
            "config-version": 2,
            "profile": PROJECT_NAME,
            "model-paths": ["models"],
            "macro-paths": ["macros"],
            "flags": {"send_anonymous_usage_stats": False, "use_colors": False},
        }
        if self.materialization == "table":
            # bring-up only: a dropped non-Iceberg table leaves its folder behind in the
            # Iceberg session catalog, and re-creating it then fails (LOCATION_ALREADY_EXISTS)
            project["models"] = {PROJECT_NAME: {"+file_format": "iceberg"}}
        (self.root / "dbt_project.yml").write_text(_yaml(project))
        (self.root / "profiles.yml").write_text(_yaml(self.profile()))
        sources = {
            "version": 2,
            "sources": [
                {
                    "name": "base",
                    "schema": self.base_schema,
                    "tables": [{"name": t.name} for t in self.tables],
                }
            ],
        }
        (self.root / "models" / "sources.yml").write_text(_yaml(sources))
        for fam in self.families:
            (self.root / "models" / f"{fam.name}.sql").write_text(self.model_sql(fam))
            for name, materialized, select in fam.upstream:
                # an upstream ivm model is a table like the family's own in bring-up runs
                kind = self.materialization if materialized == "ivm" else materialized
                rebuilt = rebuilt_config(name) if kind == "ivm" else ""
                header = f"{{{{ config(materialized={_jinja_literal(kind)}{rebuilt}) }}}}\n"
                body = textwrap.dedent(select).strip()
                (self.root / "models" / f"{name}.sql").write_text(f"{header}{body}\n")
        (self.root / "macros" / "ivm_harness.sql").write_text(
            "{% macro ivm_harness_bootstrap(base_schema) %}\n"
            # not run_query: over thrift PyHive cannot fetch a DDL's empty result
            "  {% do adapter.execute('create schema if not exists ' ~ base_schema) %}\n"
            "{% endmacro %}\n"
        )

    # ---------------------------------------------------------------------------- dbt

    def invoke(self, args: Sequence[str]) -> InvocationResult:
        """Run one dbt command in-process and collect per-model results."""
        from dbt.cli.main import dbtRunner

        full = [*args, "--project-dir", str(self.root), "--profiles-dir", str(self.root)]
        res = dbtRunner().invoke(full)
        models: dict[str, ModelResult] = {}
        results = getattr(res.result, "results", None) or []
        for r in results:
            node = getattr(r, "node", None)
            if node is None or getattr(node, "resource_type", None) is None:
                continue
            if str(node.resource_type) not in ("model", "NodeType.Model"):
                continue
            models[node.name] = ModelResult(
                name=node.name,
                status=str(getattr(r.status, "value", r.status)),
                message=str(r.message or ""),
                compiled_sql=getattr(node, "compiled_code", None),
                relation=f"{node.schema}.{node.alias}",
                seconds=float(getattr(r, "execution_time", 0.0) or 0.0),
            )
        error = (
            None if res.exception is None else f"{type(res.exception).__name__}: {res.exception}"
        )
        return InvocationResult(success=bool(res.success), models=models, error=error)

    def bootstrap(self) -> InvocationResult:
        """First invocation: starts Spark (through the adapter) and creates the base schema."""
        return self.invoke(
            [
                "run-operation",
                "ivm_harness_bootstrap",
                "--args",
                json.dumps({"base_schema": self.base_schema}),
            ]
        )

    def run(self, model_names: Sequence[str], rebuilt: Sequence[str] = ()) -> InvocationResult:
        """One `dbt run` of the given models, `rebuilt` ones with `ivm_refresh=full`."""
        args = ["run", "--select", *model_names]
        if rebuilt:
            args += ["--vars", json.dumps({REBUILT_VAR: list(rebuilt)})]
        return self.invoke(args)
