"""Fixtures of the differential harness: one dbt project and one Spark per test process."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ivm_harness.config import HarnessConfig
from ivm_harness.families import FAMILIES
from ivm_harness.report import HarnessReport
from ivm_harness.runner import Harness
from ivm_harness.spec import collect_tables
from support.spark_settings import apply_to_launcher
from support.targets import stop_shared

from dbt.adapters.spark_ivm.compiler.runtime.cost import REFRESH_ENV

_CONFIG_KEY = pytest.StashKey[HarnessConfig]()
_REPORT_KEY = pytest.StashKey[HarnessReport]()
_MORE_REPORTS_KEY = pytest.StashKey[list[tuple[str, HarnessReport]]]()
_RELAYED_KEY = pytest.StashKey[list[tuple[str, str]]]()


#: The longest modules (the harness, the TPC-H family, the cluster tests) start first, in this
#: order: with two workers (`-n 2 --dist loadfile`, pytest.ini) none is left running alone
#: at the end of the run.
FIRST = ("test_differential.py", "test_tpch.py", "test_thrift_cluster.py")
#: A worker's harness summaries, sent to the controller, which prints them (xdist).
_WORKER_REPORTS = "ivm_harness_reports"


def pytest_configure(config: pytest.Config) -> None:
    """Fix the harness configuration (and the seed) once per run: the controller of an xdist
    run draws the seed and hands it to its workers, which start after this, through the
    environment, so that the header's seed is the one the harness used."""
    config.stash[_CONFIG_KEY] = HarnessConfig.from_env()
    os.environ.setdefault("IVM_SEED", str(config.stash[_CONFIG_KEY].seed))
    # Every refresh the tests make runs the incremental rules, whatever the timings: `auto`
    # (the default) may rebuild a tiny table instead; its choice has tests of its own
    # (test_refresh_policy.py), which set `ivm_refresh` in the model's config.
    os.environ.setdefault(REFRESH_ENV, "incremental")
    # No test of ours reads dbt's artifacts (manifest.json, run_results.json, graph.gpickle):
    # the results come from dbtRunner's return value (dbt's own adapter tests do, and turn
    # them back on: tests/functional/conftest.py). Writing them cost every dbt invocation
    # 0.18 s (a no-change refresh of one model, 0.69 -> 0.51 s, tests/README *Runtime*).
    # Compiled SQL under target/compiled and partial parsing are written either way.
    os.environ.setdefault("DBT_WRITE_JSON", "false")
    # Before any Spark starts: interpreted plans, cheaper on the suite's tiny tables.
    apply_to_launcher()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return FIRST.index(name) if name in FIRST else len(FIRST)

    items.sort(key=rank)  # stable otherwise


def pytest_report_header(config: pytest.Config) -> str:
    """Show seed and knobs at the top of the run."""
    c = config.stash[_CONFIG_KEY]
    return (
        f"ivm harness: IVM_SEED={c.seed} IVM_ROUNDS={c.rounds} materialization={c.materialization} "
        f"adapter={c.adapter_type} threads={c.threads}"
    )


def _selected_families(session: pytest.Session) -> list[str]:
    """Names of the families whose tests were collected and selected (e.g. by -k)."""
    names: list[str] = []
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        fam = callspec.params.get("family") if callspec is not None else None
        if fam is not None and fam.name not in names:
            names.append(fam.name)
    return names


@pytest.fixture(scope="session")
def harness(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Harness]:
    """The harness, set up: project written, Spark started by dbt, base tables filled."""
    selected = set(_selected_families(request.session))
    families = [f for f in FAMILIES if f.name in selected]
    workdir: Path = tmp_path_factory.mktemp("ivm_harness")
    h = Harness(
        families, request.config.stash[_CONFIG_KEY], workdir, all_tables=collect_tables(FAMILIES)
    )
    h.setup()
    yield h


@pytest.fixture(scope="session")
def harness_report(request: pytest.FixtureRequest, harness: Harness) -> HarnessReport:
    """All rounds run once for all selected families; per-family tests read the report."""
    report = harness.run_rounds()
    request.config.stash[_REPORT_KEY] = report
    return report


@pytest.fixture(scope="session")
def harness_config(request: pytest.FixtureRequest) -> HarnessConfig:
    """The run's harness configuration (seed and knobs, shown in the header)."""
    return request.config.stash[_CONFIG_KEY]


@pytest.fixture(scope="session")
def record_harness_report(request: pytest.FixtureRequest):
    """`record(title, report)`: print another harness run's summary at the end (thrift)."""

    def record(title: str, report: HarnessReport) -> None:
        request.config.stash.setdefault(_MORE_REPORTS_KEY, []).append((title, report))

    return record


def _summaries(config: pytest.Config) -> list[tuple[str, str]]:
    """(title, text) of each harness run of this process."""
    report = config.stash.get(_REPORT_KEY, None)
    found = [("ivm harness", report.summary())] if report is not None else []
    more = config.stash.get(_MORE_REPORTS_KEY, [])
    return found + [(title, r.summary()) for title, r in more]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Stop the loopback Spark cluster if a test started one (`targets.shared_cluster`); in
    an xdist worker, hand the harness summaries to the controller."""
    stop_shared()
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output[_WORKER_REPORTS] = _summaries(session.config)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """xdist controller: keep a finished worker's harness summaries for the terminal."""
    received = getattr(node, "workeroutput", {}).get(_WORKER_REPORTS, [])
    node.config.stash.setdefault(_RELAYED_KEY, []).extend(tuple(r) for r in received)


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    """Print seed, per-round timings and failing families after the run."""
    for title, text in _summaries(config) + config.stash.get(_RELAYED_KEY, []):
        terminalreporter.write_sep("-", title)
        terminalreporter.write_line(text)
