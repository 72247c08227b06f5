"""The differential harness: build, change the base tables, refresh, compare, repeat.

Round 0 builds every model.  Each later round applies random changes to several base tables
with SQL, runs ONE `dbt run` over all models, and checks every model's relation against a
fresh run of its compiled SELECT (as bags; same column names, order and Spark types; no
`__ivm_` column).  Failures are collected per family with everything needed to replay them.
"""

from __future__ import annotations

import random
import textwrap
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from . import datagen
from .check import check_relation
from .compare import format_rows, row_sort_key
from .config import ROUND_PLAN, HarnessConfig, rebuilt_models, round_kinds
from .connection import SqlConnection
from .project import DbtProject, InvocationResult, ModelResult
from .report import Failure, HarnessReport, RoundLog, RoundTiming
from .spec import Family, Table, check_unique_names, collect_tables

MIN_MAX_KEEP_ENV = "DBT_SPARK_IVM_MIN_MAX_KEEP"
MIN_MAX_KEEP = (1, 2, 3, 16)  # per round, seeded: values a MIN/MAX state lists per group
MIN_MAX_SAMPLE_ENV = "DBT_SPARK_IVM_MIN_MAX_SAMPLE"
#: Per round, seeded: rows of the sample a MIN/MAX list's bound is read from where a list
#: is computed from the base tables; small ones cut the values counted (`first_values`).
MIN_MAX_SAMPLE = (5, 40, 65536)
POSITION_READ_ENV = "DBT_SPARK_IVM_POSITION_READ_MIN_BYTES"
#: Per round, seeded: the bytes of data files a merge-on-read base's deletes must point at
#: to be read by their positions; the families' files are a few KB, so 0 takes that read and
#: the plugin's default (8 MiB) the version diff of the touched files.
POSITION_READ_MIN_BYTES = (0, 8 << 20)
MERGE_SCOPE_ENV = "DBT_SPARK_IVM_MERGE_SCOPE_MIN_ROWS"
#: Per round, seeded: the state rows from which a MERGE names the delta's keys; the
#: families' states are small, so 0 names them and the plugin's default (100,000) does not.
MERGE_SCOPE_MIN_ROWS = (0, 100_000)

TARGET_SCHEMA = "ivm_harness"
BASE_SCHEMA = "ivm_harness_base"
#: Threads comparing relations after a round (queries of small tables: mostly latency).
CHECK_WORKERS = 4


class HarnessError(RuntimeError):
    """The harness itself could not run (as opposed to a model being wrong)."""


def not_rebuilt(family: Family, log: RoundLog, invocation: InvocationResult) -> list[str]:
    """The family's models that ran with `ivm_refresh=full` in this round (`log.rebuilt`) and
    refreshed all the same: a round that says it rebuilds in place must have."""
    problems = []
    for name in family.models:
        said = invocation.models.get(name)
        if name not in log.rebuilt or said is None or said.status not in ("success", "pass"):
            continue
        if not said.message.startswith(("rebuilt in place", "no MERGE")):
            problems.append(
                f"{name} ran with ivm_refresh=full in round {log.number}, and did not rebuild "
                f"in place: {said.message}"
            )
    return problems


# ------------------------------------------------------------------------------------------------
# the harness
# ------------------------------------------------------------------------------------------------


class Harness:
    """Runs the families of the differential test through build + change rounds.

    Args:
        families: the families to run (the selected ones).
        config: seed and knobs.
        workdir: an empty directory for the dbt project and the ivm home.
        all_tables: every table any family declares; which tables change in a round is drawn
            from this list, so running a subset of families replays the same data.
        output: the profile output of `config.target` when it is not the embedded session
            (`targets.profile_output`); the models and the harness's own SQL use it.
    """

    def __init__(
        self,
        families: Sequence[Family],
        config: HarnessConfig,
        workdir: Path,
        all_tables: Sequence[Table] | None = None,
        output: dict[str, Any] | None = None,
    ) -> None:
        """Prepare the project layout (nothing runs yet)."""
        check_unique_names(families)
        self.families = list(families)
        self.config = config
        self.workdir = workdir
        self.tables = collect_tables(self.families)
        # the base tables' schema, with their catalog where it is not the current one
        self.base_schema = ".".join(filter(None, (config.base_catalog, BASE_SCHEMA)))
        self.all_table_names = sorted({t.name for t in (all_tables or self.tables)})
        if output is None and config.target != "session":
            # tests/support/targets.py: starts a loopback cluster
            from support.targets import profile_output

            output = profile_output(
                config.target, TARGET_SCHEMA, workdir / "ivm_home", config.threads
            )
        self.project = DbtProject(
            workdir / "project",
            self.families,
            self.tables,
            materialization=config.materialization,
            adapter_type=config.adapter_type,
            target_schema=TARGET_SCHEMA,
            base_schema=self.base_schema,
            ivm_home=workdir / "ivm_home",
            threads=config.threads,
            output=None if output is None else dict(output),
        )
        self.changes_file = self.project.root / "changes.sql"
        self._conn: SqlConnection | None = None
        self.report = HarnessReport(
            seed=config.seed, workdir=self.project.root, families=[f.name for f in self.families]
        )

    # ---------------------------------------------------------------------------- sql

    @property
    def conn(self) -> SqlConnection:
        """SQL on dbt connections of the models' profile (after `setup`)."""
        if self._conn is None:
            raise HarnessError("harness not set up")
        return self._conn

    def sql(self, statement: str) -> None:
        """Run one statement (DDL/DML) on a dbt connection."""
        self.conn.execute(statement)

    def rows(self, table: Table) -> list[datagen.Row]:
        """Current rows of a base table, sorted (scan order varies; replays must not)."""
        rows = self.conn.query(f"SELECT * FROM {self.base_schema}.{table.name}")
        return sorted(rows, key=row_sort_key)

    def _exists(self, relation: str) -> bool:
        """Whether `schema.name` exists (table or view)."""
        return self.conn.exists(relation)

    def _log(self, text: str) -> None:
        with self.changes_file.open("a") as fh:
            fh.write(text + "\n")

    # ---------------------------------------------------------------------------- setup

    def setup(self) -> None:
        """Write the project, start Spark through dbt, create and fill the base tables."""
        start = time.monotonic()
        self.project.write()
        self.changes_file.write_text(f"-- ivm harness, seed {self.config.seed}\n")
        res = self.project.bootstrap()
        if not res.success:
            raise HarnessError(
                f"dbt bootstrap (run-operation) failed: {res.error}; see {self.project.root}/logs"
            )
        self._conn = SqlConnection(self.project.profile_output())
        self._log("-- setup")
        for table in self.tables:
            self.sql(f"DROP TABLE IF EXISTS {self.base_schema}.{table.name}")
            ddl = table.ddl(self.base_schema)
            self.sql(ddl)
            rng = datagen.table_rng(self.config.seed, "init", table)
            insert = datagen.insert_sql(table, self.base_schema, datagen.initial_rows(table, rng))
            self.sql(insert)
            self._log(f"{ddl};\n{insert};")
        self.report.setup_seconds = time.monotonic() - start

    # ---------------------------------------------------------------------------- rounds

    def apply_changes(self, number: int, kind: str) -> RoundLog:
        """Apply the random changes of one round to the base tables (SQL, several tables)."""
        log = RoundLog(number, kind)
        seed = self.config.seed
        if kind in ("build", "noop"):
            return log
        if kind == "empty":
            for table in self.tables:
                stmt = f"DELETE FROM {self.base_schema}.{table.name}"
                self.sql(stmt)
                log.statements[table.name] = [stmt]
        else:
            if kind == "all":
                # Every table of this run changes. A `mixed` round draws its tables from every
                # family's (so that `-k` replays the full run's changes), and a subset of
                # families (the thrift one) may then see no change at all in that round.
                changed = {table.name for table in self.tables}
            else:
                pick = random.Random(f"{seed}/{number}/tables")
                names = self.all_table_names
                changed = set(pick.sample(names, pick.randint(min(2, len(names)), len(names))))
            for table in self.tables:
                rng = datagen.table_rng(seed, number, table)
                rows = self.rows(table)
                if table.name not in changed and rows:
                    continue
                stmts: list[str] = []
                for n in range(rng.randint(1, 4)):
                    if n:  # the next statement is drawn from the rows the last one left
                        rows = self.rows(table)
                    stmt = datagen.change_statement(table, self.base_schema, rows, rng)
                    self.sql(stmt)
                    stmts.append(stmt)
                log.statements[table.name] = stmts
        self._log(f"-- round {number} ({kind})\n" + log.describe())
        return log

    def _corrupt(self, number: int, models: dict[str, ModelResult]) -> None:
        """Inject a wrong row into a relation (IVM_HARNESS_CORRUPT), to see the harness fail."""
        if self.config.corrupt is None or self.config.corrupt[1] != number:
            return
        result = models.get(self.config.corrupt[0])
        if result is None or not result.compiled_sql:
            return
        try:
            self.sql(f"INSERT INTO {result.relation} SELECT * FROM ({result.compiled_sql}) LIMIT 1")
        except Exception as exc:
            raise HarnessError(
                f"IVM_HARNESS_CORRUPT: cannot insert into {result.relation} (a view? the knob "
                f"works with IVM_HARNESS_MATERIALIZATION=table): {exc}"
            ) from exc

    def check_family(
        self,
        family: Family,
        result: ModelResult | None,
        log: RoundLog,
        invocation: InvocationResult,
    ) -> Failure | None:
        """Check one family's model after a round; a `Failure` with full context, or None."""
        problems: list[str]
        if result is None:
            problems = [f"dbt produced no result for model {family.name}: {invocation.error}"]
        elif result.status not in ("success", "pass"):
            problems = [f"dbt run of the model: {result.status}: {result.message}"]
            if result.compiled_sql and self._exists(result.relation):
                check = check_relation(self.conn, result.relation, result.compiled_sql)
                problems.append(
                    "the relation nevertheless matches its SELECT"
                    if check.ok
                    else "and the relation (as left by that run):\n" + "\n".join(check.problems)
                )
        elif not result.compiled_sql:
            problems = ["dbt returned no compiled SQL for the model"]
        else:
            problems = check_relation(self.conn, result.relation, result.compiled_sql).problems
        problems += not_rebuilt(family, log, invocation)
        if not problems:
            return None
        sql = result.compiled_sql if result is not None else None
        text = self._failure_text(family, log, problems, sql)
        return Failure(family.name, log.number, log.kind, text)

    def _failure_text(
        self, family: Family, log: RoundLog, problems: list[str], compiled_sql: str | None
    ) -> str:
        """The failure message: what, where, how to replay, the round's changes, the data."""
        c = self.config
        rounds = len(round_kinds(c.rounds, c.plan)) - 1
        table_names = [t.name for t in family.tables]
        target = "" if c.target == "session" else f"IVM_TEST_TARGET={c.target} "
        if c.plan != ROUND_PLAN:
            target += f"IVM_ROUND_PLAN={','.join(c.plan)} "
        parts = [
            f"family {family.name}: round {log.number} of {rounds} ({log.kind}), seed {c.seed}",
            (
                f"replay: {target}IVM_SEED={c.seed} IVM_ROUNDS={c.rounds} "
                f"IVM_HARNESS_THREADS={c.threads} "
                ".venv/bin/pytest "
                f"tests/test_differential.py -k '{family.name}'"
            ),
            (
                f"relation {TARGET_SCHEMA}.{family.name} (materialized={c.materialization}, "
                f"adapter {c.adapter_type}, target {c.target})"
            ),
            "",
            *problems,
            "",
            "model SQL (compiled):" if compiled_sql else "model SQL:",
            "  " + textwrap.dedent(compiled_sql or family.sql).strip().replace("\n", "\n  "),
            "",
            f"changes applied in round {log.number} before its dbt run:",
            log.describe(table_names),
            "",
        ]
        mine = [n for n in family.models if n in log.rebuilt]
        if mine:
            parts.insert(3, f"this round ran {', '.join(mine)} with ivm_refresh=full")
        for table in family.tables:
            try:
                rows = self.rows(table)
                parts.append(f"base table {table.name} now ({len(rows)} rows):")
                parts.append(format_rows([col.name for col in table.cols], rows))
            except Exception as exc:  # noqa: BLE001
                parts.append(f"base table {table.name}: cannot read: {exc}")
        parts.append(
            f"\ndbt project: {self.project.root} (logs/dbt.log; every change of every round in "
            f"{self.changes_file.name})"
        )
        return "\n".join(parts)

    def run(self) -> HarnessReport:
        """Set up, then run every round; failures are collected, not raised."""
        self.setup()
        return self.run_rounds()

    def run_rounds(self) -> HarnessReport:
        """Run the build round and every change round (after `setup`)."""
        names = [f.name for f in self.families]
        names += [name for f in self.families for name, _, _ in f.upstream]
        for fam in self.families:
            self.report.failures[fam.name] = []
        ivm: list[str] = []
        if self.config.materialization == "ivm":
            ivm = [f.name for f in self.families]
            ivm += [n for f in self.families for n, kind, _ in f.upstream if kind == "ivm"]
        for number, kind in enumerate(round_kinds(self.config.rounds, self.config.plan)):
            t0 = time.monotonic()
            log = self.apply_changes(number, kind)
            log.rebuilt = rebuilt_models(self.config.seed, number, ivm)
            t1 = time.monotonic()
            # MIN/MAX states list this many values per group, from a sample of this many
            # rows where a list is computed from the base tables; small, changing numbers
            # drive lists past their end (cut, bound, recompute) in every round kind. And
            # merge-on-read deletes are read by their positions or by the version diff, and
            # a MERGE names the delta's keys or not.
            pick = random.Random(f"{self.config.seed}/{number}/keep")
            with pytest.MonkeyPatch.context() as settings:
                settings.setenv(MIN_MAX_KEEP_ENV, str(pick.choice(MIN_MAX_KEEP)))
                settings.setenv(MIN_MAX_SAMPLE_ENV, str(pick.choice(MIN_MAX_SAMPLE)))
                settings.setenv(POSITION_READ_ENV, str(pick.choice(POSITION_READ_MIN_BYTES)))
                settings.setenv(MERGE_SCOPE_ENV, str(pick.choice(MERGE_SCOPE_MIN_ROWS)))
                invocation = (
                    self.project.run(names, log.rebuilt)
                    if names
                    else InvocationResult(True, {}, None)
                )
            self._corrupt(number, invocation.models)
            for name, result in invocation.models.items():
                self.report.model_seconds[name] = (
                    self.report.model_seconds.get(name, 0.0) + result.seconds
                )
            t2 = time.monotonic()
            # the checks only read; Spark runs queries from several threads concurrently
            with ThreadPoolExecutor(max_workers=CHECK_WORKERS) as pool:
                futures = [
                    pool.submit(
                        self.check_family, fam, invocation.models.get(fam.name), log, invocation
                    )
                    for fam in self.families
                ]
                failures = [f.result() for f in futures]
                for fam, failure in zip(self.families, failures, strict=True):
                    if failure is not None:
                        self.report.failures[fam.name].append(failure)
            t3 = time.monotonic()
            self.report.timings.append(RoundTiming(number, kind, t1 - t0, t2 - t1, t3 - t2))
            self._log(f"-- round {number}: dbt {t2 - t1:.1f}s")
        return self.report
