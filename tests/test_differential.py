"""The differential test: every family's relation equals a fresh run of its SELECT, every round.

All selected families run together (one `dbt run` per round, see `ivm_harness.runner`); each
family then gets its own pass/fail here.  Replay a failure with the `IVM_SEED` it prints.
"""

from __future__ import annotations

import pytest
from ivm_harness.families import FAMILIES
from ivm_harness.report import HarnessReport
from ivm_harness.spec import Family


@pytest.mark.parametrize("family", FAMILIES, ids=[f.name for f in FAMILIES])
def test_family(family: Family, harness_report: HarnessReport) -> None:
    """The family's relation matched its SELECT after the build and after every change round."""
    failures = harness_report.failures.get(family.name)
    assert failures is not None, f"family {family.name} did not run"
    if failures:
        later = ""
        if len(failures) > 1:
            later = "\n\nalso failed in rounds: " + ", ".join(str(f.round) for f in failures[1:])
        pytest.fail(failures[0].text + later, pytrace=False)
