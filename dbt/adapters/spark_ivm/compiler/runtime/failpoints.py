"""failpoints: where a test may make a run fail, to prove that a failure loses nothing.

`FAIL_ENV` names a step after which the run raises `InjectedFailure` (`STEPS` of a refresh,
`REBUILD_STEP` and `REPLACED_STEP` of a rebuild): a failure between any two statements must leave the
previous state readable and the next run exact.
"""

from __future__ import annotations

import os

from dbt.adapters.spark_ivm.compiler.errors import InjectedFailure

FAIL_ENV = "DBT_SPARK_IVM_FAIL_AFTER"
#: The steps of a refresh, in order.
STEPS = ("capture", "logs", "delta", "recompute", "commit")
#: The step of a rebuild (in place, or replacing the state): just before its one commit.
REBUILD_STEP = "rebuild"
#: The step of a rebuild that replaced the state: after its commit, before the view is made.
REPLACED_STEP = "replaced"


def checkpoint(model: str, step: str) -> None:
    """Fail here when a test asks for it (`FAIL_ENV`)."""
    if os.environ.get(FAIL_ENV) == step:
        raise InjectedFailure(f"ivm model '{model}': injected failure after step {step}")
