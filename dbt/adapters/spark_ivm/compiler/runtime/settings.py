"""settings: a model's ivm options, read from its dbt config, else from the environment."""

from __future__ import annotations

import os
from collections.abc import Sequence

from dbt.adapters.spark_ivm.compiler.errors import IvmError


def model_setting(
    model: str, name: str, configured: object, env: str, choices: Sequence[str], default: str
) -> str:
    """The value of config `name` (else environment variable `env`, else `default`), one of
    `choices` in lower case; anything else is an error naming both places to set it.

    >>> model_setting("m", "ivm_unsupported", " Rebuild", "X", ("error", "rebuild"), "error")
    'rebuild'
    """
    value = configured if configured is not None else os.environ.get(env, default)
    chosen = str(value).strip().lower()
    if chosen not in choices:
        raise IvmError(
            f"ivm model '{model}': {name} = {value!r} is not one of {', '.join(choices)} "
            f"(set in the model's config or {env})."
        )
    return chosen
