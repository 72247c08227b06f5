"""dbt invoked in-process on a benchmark project: timed runs, per-model times and steps."""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dbt.cli.main import dbtRunnerResult

#: The star workload's dbt project; its profiles.yml serves every workload.
PROJECT_DIR = Path(__file__).resolve().parent / "project"
#: An ivm model's log line with the time of one refresh statement (DBT_SPARK_IVM_TIMINGS=1).
STEP_LINE = re.compile(r"ivm model '(?P<model>[^']+)':\s+(?P<seconds>[0-9.]+)s (?P<label>.+)")


class BenchError(RuntimeError):
    """The benchmark could not go on (dbt failed, or a model is wrong)."""


@dataclass
class ModelTiming:
    """One model in one `dbt run`."""

    seconds: float
    status: str
    message: str
    steps: list[tuple[str, float]] = field(default_factory=list)


@dataclass
class Invocation:
    """One `dbt run`: wall time and per-model times."""

    wall: float
    models: dict[str, ModelTiming]
    load_average: float  # the machine's 1-minute load average when it started

    @property
    def overhead(self) -> float:
        """Wall time outside the models (dbt start-up, parsing, run results)."""
        return self.wall - sum(m.seconds for m in self.models.values())

    def as_json(self) -> dict[str, Any]:
        return {
            "wall": self.wall,
            "overhead": self.overhead,
            "load_average": self.load_average,
            "models": {name: asdict(m) for name, m in self.models.items()},
        }


class Dbt:
    """In-process dbt on the benchmark project, output under the work directory."""

    def __init__(self, workdir: Path, project_dir: Path = PROJECT_DIR) -> None:
        from dbt.cli.main import dbtRunner

        self.workdir = workdir
        self.project_dir = project_dir
        self._steps: list[tuple[str, str, float]] = []
        self.runner = dbtRunner(callbacks=[self._on_event])

    def _on_event(self, event: Any) -> None:
        match = STEP_LINE.search(str(getattr(event.info, "msg", "")))
        if match:
            self._steps.append((match["model"], match["label"], float(match["seconds"])))

    def invoke(self, *args: str) -> dbtRunnerResult:
        res = self.runner.invoke(
            [
                *args,
                "--project-dir",
                str(self.project_dir),
                "--profiles-dir",
                str(PROJECT_DIR),
                "--target-path",
                str(self.workdir / "target"),
                "--log-path",
                str(self.workdir / "logs"),
                "--quiet",
            ]
        )
        if not res.success:
            failed = [
                f"{r.node.name}: {r.status}: {r.message}"
                for r in getattr(res.result, "results", None) or []
                if str(getattr(r.status, "value", r.status)) not in ("success", "pass")
            ]
            raise BenchError(
                f"dbt {' '.join(args)} failed: {res.exception or '; '.join(failed)} "
                f"(log: {self.workdir / 'logs' / 'dbt.log'})"
            )
        return res

    def run(self, *args: str) -> Invocation:
        """`dbt run ARGS`, timed; per-model execution times from dbt's run results."""
        self._steps = []
        load = os.getloadavg()[0]
        start = time.perf_counter()
        res = self.invoke("run", *args)
        wall = time.perf_counter() - start
        models: dict[str, ModelTiming] = {}
        for r in res.result.results:
            models[r.node.name] = ModelTiming(
                seconds=float(r.execution_time),
                status=str(getattr(r.status, "value", r.status)),
                message=str(r.message or ""),
                steps=[(label, s) for m, label, s in self._steps if m == r.node.name],
            )
        return Invocation(wall, models, load)


@contextlib.contextmanager
def environment_variables(values: dict[str, str]) -> Iterator[None]:
    """Set environment variables for the block (the profile reads them), then restore them."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
