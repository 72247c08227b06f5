"""A `dbt run` killed at any moment leaves nothing the next ordinary run cannot finish exactly
(issue 39, item 5).

Real runs, really killed: each `dbt run` is a process of its own with its embedded Spark (its
JVM a child in the same process group), and SIGKILL goes to the whole group at a random
moment of the run's models (drawn from the duration of the models of the first, uncut
build; seeded and printed), so it lands in a change log, a delta, a MERGE, the delta log,
upkeep, or between two states of one model. The killed run's producer changes (random
inserts, updates and deletes with NULLs and duplicates, in `on-run-start`) may be cut too.
The killed runs come one after another, each refreshing from what the one before left and
not failing before its own kill; then an ordinary `dbt build` with more changes must succeed
and every model pass `ivm_consistent` (its relation equals a fresh run of its SQL). The models: an aggregate with MIN/MAX, a LEFT
JOIN, a window, a scalar sub-query (two states, two commits) and a model over another ivm
model (its delta log).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support.targets import SESSION, default_target

SCHEMA = "killed"
ROUNDS = 3
SEED = int(os.environ.get("IVM_SEED", "20261128"))
MODELS = {
    "agg": (
        "select k, count(*) as n, sum(x) as s, min(x) as mn, max(x) as mx "
        f"from {SCHEMA}.t group by k"
    ),
    "lj": f"select t.id, t.k, u.y from {SCHEMA}.t t left join {SCHEMA}.u u on t.k = u.k",
    "win": f"select id, k, x, rank() over (partition by k order by x) as r from {SCHEMA}.t",
    "above": (
        f"select k, count(*) as n from {SCHEMA}.t where x > (select avg(x) from {SCHEMA}.t) "
        "group by k"
    ),
    "rollup": "select n > 1 as several, count(*) as groups, sum(s) as s from {{ ref('agg') }} "
    "group by n > 1",
}
KEYS = ["'a'", "'b'", "'c'", "NULL"]
CHANGES_MACRO = """
{% macro killed_changes() %}
  {% for statement in var('changes', []) %}
    {% do run_query(statement) %}
  {% endfor %}
{% endmacro %}
"""

pytestmark = pytest.mark.skipif(
    default_target() != SESSION, reason="kills the dbt process and its embedded Spark"
)


def _value(rnd: random.Random) -> str:
    return "NULL" if rnd.random() < 0.15 else str(rnd.randint(-5, 9))


def _setup() -> list[str]:
    rnd = random.Random(SEED)
    rows = ", ".join(f"({i}, {rnd.choice(KEYS)}, {_value(rnd)})" for i in range(30))
    return [
        f"CREATE DATABASE IF NOT EXISTS {SCHEMA}",
        f"CREATE TABLE {SCHEMA}.t (id int, k string, x int) USING iceberg",
        f"CREATE TABLE {SCHEMA}.u (k string, y int) USING iceberg",
        f"INSERT INTO {SCHEMA}.t VALUES {rows}",
        f"INSERT INTO {SCHEMA}.u VALUES ('a', 1), ('a', 2), ('b', NULL), (NULL, 4)",
    ]


def _changes(rnd: random.Random, first_id: int) -> list[str]:
    """Inserts (a duplicate row among them), updates and deletes of both tables."""
    values = [f"({first_id + i}, {rnd.choice(KEYS)}, {_value(rnd)})" for i in range(3)]
    values.append(values[-1].replace(f"({first_id + 2},", f"({first_id + 3},"))
    return [
        f"INSERT INTO {SCHEMA}.t VALUES {', '.join(values)}",
        f"UPDATE {SCHEMA}.t SET x = {_value(rnd)} WHERE id % 7 = {rnd.randint(0, 6)}",
        f"DELETE FROM {SCHEMA}.t WHERE id % 9 = {rnd.randint(0, 8)}",
        f"INSERT INTO {SCHEMA}.u VALUES ({rnd.choice(KEYS)}, {_value(rnd)})",
        f"DELETE FROM {SCHEMA}.u WHERE y = {rnd.randint(0, 9)}",
    ]


def _project(root: Path) -> None:
    (root / "models").mkdir(parents=True)
    (root / "macros").mkdir()
    (root / "dbt_project.yml").write_text(
        "name: killed\nversion: '1.0'\nconfig-version: 2\nprofile: killed\n"
        'on-run-start: ["{{ killed_changes() }}"]\n'
    )
    output = {
        "type": "spark_ivm",
        "method": "session",
        "host": "localhost",
        "schema": SCHEMA,
        "threads": 2,
        "ivm_home": str(root / "home"),
    }
    (root / "profiles.yml").write_text(
        json.dumps({"killed": {"target": "dev", "outputs": {"dev": output}}})
    )
    (root / "macros" / "changes.sql").write_text(CHANGES_MACRO)
    for name, select in MODELS.items():
        (root / "models" / f"{name}.sql").write_text("{{ config(materialized='ivm') }}\n" + select)
    tests = [{"name": m, "data_tests": ["ivm_consistent"]} for m in MODELS]
    (root / "models" / "schema.yml").write_text(json.dumps({"version": 2, "models": tests}))


class Run:
    """One dbt process (and its Spark), its output lines timed as they come."""

    def __init__(self, root: Path, command: str, changes: list[str]) -> None:
        self.lines: list[tuple[float, str]] = []
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "dbt.cli.main", command, "--vars",
             json.dumps({"changes": changes}), "--project-dir", str(root),
             "--profiles-dir", str(root)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True, env={**os.environ, "NO_COLOR": "1"},
        )  # fmt: skip
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append((time.monotonic(), line.rstrip()))

    def first(self, words: str) -> float | None:
        """When the first line with `words` came (None: none yet)."""
        return next((t for t, line in self.lines if words in line), None)

    def wait(self, timeout: float = 900) -> int:
        code = self.proc.wait(timeout=timeout)
        self.reader.join(timeout=30)
        return code

    def text(self) -> str:
        return "\n".join(line for _, line in self.lines)

    def models_seconds(self) -> float:
        """From the first model's start to the last model's end."""
        start = self.first("START sql ivm model")
        assert start is not None, self.text()[-3000:]
        return max(t for t, line in self.lines if "OK created sql ivm model" in line) - start

    def kill_after_models_start(self, delay: float) -> str:
        """SIGKILL the process group `delay` s after the first model started; the last line
        the run printed before."""
        deadline = time.monotonic() + 600
        while (start := self.first("START sql ivm model")) is None and self.proc.poll() is None:
            assert time.monotonic() < deadline, self.text()[-3000:]
            time.sleep(0.05)
        assert start is not None, f"the run ended before any model started:\n{self.text()[-3000:]}"
        time.sleep(max(0.0, start + delay - time.monotonic()))
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:  # it ended first: no kill this round
            pass
        self.wait()
        return self.lines[-1][1] if self.lines else ""


def _build(root: Path, changes: list[str]) -> Run:
    """An ordinary `dbt build`: it must succeed, every ivm_consistent test passing."""
    run = Run(root, "build", changes)
    code = run.wait()
    output = run.text()
    assert code == 0, output[-5000:]
    passed = [line for line in output.splitlines() if " PASS ivm_consistent_" in line]
    built = [line for line in output.splitlines() if " OK created sql ivm model " in line]
    assert len(passed) == len(built) == len(MODELS), output[-3000:]
    return run


def test_runs_killed_at_random_moments_leave_the_next_run_exact(tmp_path: Path) -> None:
    """Killed runs in a row, each with changes: each starts where the killed one before it
    left things and must not fail before its own kill; then an ordinary build is exact."""
    _project(tmp_path)
    rnd = random.Random(SEED)
    window = _build(tmp_path, _setup()).models_seconds()
    kills = attempts = 0
    while kills < ROUNDS:
        attempts += 1
        # A run that ends before its kill tests nothing: its own time bounds the next draw.
        assert attempts <= ROUNDS + 3, f"only {kills} of {attempts} runs were cut"
        delay = rnd.uniform(0.0, window)
        killed = Run(tmp_path, "run", _changes(rnd, 1000 + 10 * attempts))
        said = killed.kill_after_models_start(delay)
        print(
            f"run {attempts}: {delay:.2f} s into {window:.2f} s of models, exit "
            f"{killed.proc.returncode}; its last line: {said}"
        )
        errors = [line for line in killed.text().splitlines() if " ERROR " in line]
        assert not errors and killed.proc.returncode in (0, -signal.SIGKILL), killed.text()[-3000:]
        if killed.proc.returncode == -signal.SIGKILL:
            kills += 1
        else:
            window = killed.models_seconds()
    _build(tmp_path, _changes(rnd, 2000))
