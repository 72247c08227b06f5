"""environment: the numbers a user may tune through environment variables.

Five knobs are numbers rather than a model's config (`runtime/settings.py` reads those): how
many values a MIN/MAX state keeps per group and the sample its bound is read from
(`operators/aggregates/extremes.py`), the bytes a merge-on-read window's deletes must point at
to be read by their positions (`runtime/file_reads.py`), the seconds a statement costs in
the prior of a refresh never timed (`runtime/cost.py`), and the state rows from which a
MERGE names its keys (`runtime/merge_scope.py`). Each is read the same way: unset or
blank is the default; anything that is not a number at least the knob's lowest value fails
the run before it commits, with a message naming the variable and what it takes.
"""

from __future__ import annotations

import os
from typing import TypeVar

from dbt.adapters.spark_ivm.compiler.errors import IvmError

Number = TypeVar("Number", int, float)


def number_from_env(name: str, default: Number, least: Number, unit: str) -> Number:
    """The number environment variable `name` holds (of `default`'s type), else `default`;
    IvmError for a value that is not a number of `unit` at least `least`.

    >>> os.environ["IVM_DOCTEST_KNOB"] = " 3 "
    >>> number_from_env("IVM_DOCTEST_KNOB", 16, 1, "values")
    3
    >>> os.environ["IVM_DOCTEST_KNOB"] = ""
    >>> number_from_env("IVM_DOCTEST_KNOB", 0.25, 0.0, "seconds")
    0.25
    >>> os.environ["IVM_DOCTEST_KNOB"] = "0"
    >>> number_from_env("IVM_DOCTEST_KNOB", 16, 1, "values")
    Traceback (most recent call last):
    ...
    dbt.adapters.spark_ivm.compiler.errors.IvmError: IVM_DOCTEST_KNOB = '0' is not a number \
of values (1 or more); unset it for the default, 16.
    >>> del os.environ["IVM_DOCTEST_KNOB"]
    """
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    value: Number | None
    try:
        value = type(default)(raw)
    except ValueError:
        value = None
    if value is None or not value >= least:
        raise IvmError(
            f"{name} = {raw!r} is not a number of {unit} ({least} or more); unset it for "
            f"the default, {default}."
        )
    return value
