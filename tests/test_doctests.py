"""Every docstring example of the plugin runs: a rule's tiny example is part of the suite.

Each module of `dbt.adapters.spark_ivm` (and the tests' own `support.plan_probe` and
`ivm_harness.datagen`, the benchmark's `bench.report` modules that compute) is
one item; a module without examples passes trivially, one whose example no longer holds
fails with doctest's report. No Spark: the examples are compiler rules on sqlglot trees.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import dbt.adapters.spark_ivm as plugin

MODULES = sorted(
    name for _, name, _ in pkgutil.walk_packages(plugin.__path__, prefix=f"{plugin.__name__}.")
)


def test_the_package_has_examples():
    """The walk found the compiler (a broken walk would make every item below vacuous)."""
    assert f"{plugin.__name__}.compiler.frontend.comma_joins" in MODULES
    finder = doctest.DocTestFinder()
    found = sum(
        any(t.examples for t in finder.find(importlib.import_module(name))) for name in MODULES
    )
    assert found >= 15


@pytest.mark.parametrize(
    "name",
    [
        *MODULES,
        "support.plan_probe",
        "ivm_harness.datagen",
        "ivm_harness.config",
        "ivm_harness.project",
        "bench.draws",
        "bench.options",
        "bench.report.figures",
        "bench.report.rebuilds",
        "bench.report.targets",
        "bench.rounds",
    ],
)
def test_examples_hold(name: str):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
