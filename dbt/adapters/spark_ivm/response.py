"""response: what an ivm model's run reports in dbt's `adapter_response` (run_results.json).

dbt keeps the materialization's response per model; for an ivm model it says what the run
did and to how many rows of the model's state:

    {"_message": "refreshed (...): state rows +3 ~1 -2", "code": "refresh",
     "rows_affected": 6, "mode": "refresh", "reason": "incremental",
     "rows_inserted": 3, "rows_updated": 1, "rows_deleted": 2}

`mode` is one of `build` (the first run), `refresh` (changes applied), `no change` (nothing
to apply), `rebuild` (built anew: changed SQL, `--full-refresh`, a base-table event, or a
table written by `ivm_unsupported='rebuild'`), `skipped` (a change that would rebuild it left
unapplied, `on_configuration_change: continue`, or an existing model under `--empty`),
`empty` (`--empty` on a model not built yet: its shape without rows), with `reason` saying
why.
"""

from __future__ import annotations

from dataclasses import dataclass

from dbt.adapters.contracts.connection import AdapterResponse

from dbt.adapters.spark_ivm.compiler.runtime.outcome import FIRST_RUN, Mode, Outcome

#: What a run did, as `mode` says it.
MODES = ("build", "refresh", "no change", "rebuild", "skipped", "empty")


@dataclass
class IvmAdapterResponse(AdapterResponse):
    """dbt's adapter response with what the ivm run did (see the module)."""

    mode: str = ""
    reason: str = ""
    rows_inserted: int | None = None
    rows_updated: int | None = None
    rows_deleted: int | None = None


def mode_of(outcome: Outcome) -> str:
    """The run's mode as a user reads it.

    >>> from dbt.adapters.spark_ivm.compiler.runtime.outcome import StateRows
    >>> def run(mode, reason, rows):
    ...     return mode_of(Outcome(mode, reason, "", "", rows=rows))
    >>> run(Mode.BUILD, FIRST_RUN, StateRows(5)), run(Mode.BUILD, "--full-refresh", StateRows(5))
    ('build', 'rebuild')
    >>> run(Mode.REFRESH, "incremental", StateRows()), run(Mode.REFRESH, "incremental", StateRows(1))
    ('no change', 'refresh')
    >>> run(Mode.SKIP, "its SQL changed since its state was built", StateRows())
    'skipped'
    """
    if outcome.mode is Mode.BUILD:
        return "build" if outcome.reason == FIRST_RUN else "rebuild"
    if outcome.mode is Mode.REFRESH:
        return "refresh" if outcome.changed else "no change"
    if outcome.mode is Mode.SKIP:
        return "skipped"
    if outcome.mode is Mode.EMPTY:
        return "empty"
    return "rebuild"


def response(outcome: Outcome) -> IvmAdapterResponse:
    """The adapter response of a run that ended in `outcome`."""
    rows = outcome.rows
    mode = mode_of(outcome)
    return IvmAdapterResponse(
        _message=outcome.summary,
        code=mode,
        rows_affected=None if rows is None else rows.affected,
        mode=mode,
        reason=outcome.reason,
        rows_inserted=None if rows is None else rows.inserted,
        rows_updated=None if rows is None else rows.updated,
        rows_deleted=None if rows is None else rows.deleted,
    )
