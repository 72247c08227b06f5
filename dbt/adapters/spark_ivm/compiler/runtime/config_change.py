"""config_change: dbt's `on_configuration_change` for an ivm model whose definition changed.

A run rebuilds a model's state from scratch when the model's SQL changed since the state was
built (compared as canonical trees, `frontend/canonical.py`: a comment or whitespace is no
change) or when its `ivm_aux_states` setting changed so that it gains or loses an auxiliary
state (`chain.py`). A rebuild of a large model is expensive, and may not be wanted in a run
that only meant to refresh; the config says what such a run does, as it does for
dbt-databricks' materialized views:

    apply     (default) rebuild, as without the config;
    continue  leave the relation and its state as they are (not refreshed either: the state
              is of the old SQL), warn naming the model and the change, and succeed;
    fail      fail the model, naming it and the change; nothing is touched.

`--full-refresh` rebuilds whatever the config says (dbt's `full_refresh: false` already keeps
a model from it). The decision is made before anything is written (`ChainMaintainer.run`),
so a held model's sub-query and auxiliary states are untouched too.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

from dbt.adapters.spark_ivm.compiler.errors import IvmError
from dbt.adapters.spark_ivm.compiler.frontend.canonical import comparable_sql
from dbt.adapters.spark_ivm.compiler.runtime.outcome import Mode, Outcome, StateRows

#: How to apply a held change, as the warning and the error say it.
HOW_TO_APPLY = "run it with --full-refresh, or set on_configuration_change: apply (it is rebuilt)"


class OnChange(StrEnum):
    """dbt's `on_configuration_change`, for a change that rebuilds an ivm model."""

    APPLY = "apply"
    CONTINUE = "continue"
    FAIL = "fail"

    @classmethod
    def of(cls, configured: object, model: str) -> OnChange:
        """The model's setting (None: dbt's default, `apply`); anything else is an error.

        >>> OnChange.of(None, "m"), OnChange.of(" Continue", "m")
        (<OnChange.APPLY: 'apply'>, <OnChange.CONTINUE: 'continue'>)
        """
        value = "apply" if configured is None else str(configured).strip().lower()
        try:
            return cls(value)
        except ValueError:
            raise IvmError(
                f"ivm model '{model}': on_configuration_change = {configured!r} is not one of "
                f"{', '.join(m.value for m in cls)}."
            ) from None


class ConfigChangeError(IvmError):
    """A model whose change would rebuild it, under `on_configuration_change: fail`.

    >>> str(ConfigChangeError("m", "its SQL changed since its state was built"))[:70]
    "ivm model 'm': its SQL changed since its state was built, and on_confi"
    """

    def __init__(self, model: str, change: str) -> None:
        self.model = model
        self.change = change
        super().__init__(
            f"ivm model '{model}': {change}, and on_configuration_change is 'fail': nothing "
            f"was built or changed. To apply the change, {HOW_TO_APPLY}."
        )


def sql_change(recorded: str | None, model_sql: str) -> str | None:
    """What changed when the model's SQL is not the one its view records (`ivm.sql`), as
    canonical trees; None when it is the same (or no SQL is recorded: not an ivm view's).

    >>> sql_change("select k from db.t", "SELECT k\\n  FROM db.t -- the keys") is None
    True
    >>> sql_change("select k from db.t", "select k from db.t where k > 0")
    'its SQL changed since its state was built'
    """
    if recorded is None or comparable_sql(recorded) == comparable_sql(model_sql):
        return None
    return "its SQL changed since its state was built"


def held(
    on_change: OnChange, model: str, view: str, change: str, warn: Callable[[str], None]
) -> Outcome | None:
    """What a run does with `change`, which would rebuild the model: None, rebuild
    (`apply`); a skipped run, warned (`continue`); `ConfigChangeError` (`fail`). The skipped
    run runs no statement, as a run that finds no change.

    >>> skipped = held(OnChange.CONTINUE, "m", "db.m", "its SQL changed", lambda _: None)
    >>> skipped.mode, skipped.main_sql
    (<Mode.SKIP: 'skip'>, None)
    """
    if on_change is OnChange.APPLY:
        return None
    if on_change is OnChange.FAIL:
        raise ConfigChangeError(model, change)
    warn(
        f"ivm model '{model}': {change}; on_configuration_change is 'continue', so {view} and "
        f"its state were left as they were (not refreshed). To apply the change, {HOW_TO_APPLY}."
    )
    return Outcome(
        mode=Mode.SKIP,
        reason=change,
        main_sql=None,
        summary=(
            f"skipped (on_configuration_change: continue): {change}; the relation was left as "
            "it was"
        ),
        rows=StateRows(),
    )
