"""failpoints: where a test may make a run fail, to prove that a failure loses nothing.

`FAIL_ENV` names a step after which the run raises `InjectedFailure` (`STEPS` of a refresh,
`REBUILD_STEP` and `REPLACED_STEP` of a rebuild): a failure between any two statements must leave the
previous state readable and the next run exact. `PAUSE_ENV` (`step:path`) holds a run after
a step until the file `path` exists, having written `path.<model>.paused`: a test orders two
runs of one model with it (one commits while the other waits to), or commits to a base table
while a refresh waits.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from dbt.adapters.spark_ivm.compiler.errors import InjectedFailure

FAIL_ENV = "DBT_SPARK_IVM_FAIL_AFTER"
PAUSE_ENV = "DBT_SPARK_IVM_PAUSE_AFTER"
#: How long a paused run waits for its file before it goes on anyway.
PAUSE_LIMIT_S = 600.0
#: The steps of a refresh, in order.
STEPS = ("capture", "logs", "delta", "recompute", "commit")
#: The step of a rebuild (in place, or replacing the state): just before its one commit.
REBUILD_STEP = "rebuild"
#: The step of a rebuild that replaced the state: after its commit, before the view is made.
REPLACED_STEP = "replaced"


def checkpoint(model: str, step: str) -> None:
    """Fail or pause here when a test asks for it (`FAIL_ENV`, `PAUSE_ENV`)."""
    if os.environ.get(FAIL_ENV) == step:
        raise InjectedFailure(f"ivm model '{model}': injected failure after step {step}")
    paused, _, path = os.environ.get(PAUSE_ENV, "").partition(":")
    if paused == step and path:
        resume = Path(path)
        Path(f"{path}.{model}.paused").write_text(model)
        deadline = time.monotonic() + PAUSE_LIMIT_S
        while not resume.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
