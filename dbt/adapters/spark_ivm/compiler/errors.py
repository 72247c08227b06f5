"""Errors the ivm compiler raises: each names the model and the construct it refuses."""

from __future__ import annotations

from dataclasses import dataclass


def fragment(node: object, limit: int = 120) -> str:
    """A sqlglot node's Spark SQL, cut to `limit` characters: the part an error quotes."""
    text = node.sql(dialect="spark")  # type: ignore[attr-defined]
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class Refusal:
    """Why a rule or a path does not apply, as a value: the caller takes another path (a
    version diff instead of a delta log, no auxiliary state) or rebuilds, and says why.

    >>> found = Refusal("the window touched more than 400 files")
    >>> f"version diff ({found})"
    'version diff (the window touched more than 400 files)'
    """

    reason: str

    def __str__(self) -> str:
        return self.reason


class IvmError(Exception):
    """Base class for every error of the ivm compiler and refresh."""


class UnsupportedQueryError(IvmError):
    """The model's SELECT uses a construct that cannot be maintained incrementally.

    >>> str(UnsupportedQueryError("orders_by_day", "window function", "row_number() OVER (...)"))
    "ivm model 'orders_by_day': window function is not supported: row_number() OVER (...). ..."
    """

    def __init__(self, model: str, construct: str, fragment: str = "", hint: str = "") -> None:
        self.model = model
        self.construct = construct
        self.fragment = fragment
        where = f": {fragment}" if fragment else ""
        advice = hint or (
            "Rewrite the model without it, or use materialized='table' for this model."
        )
        super().__init__(f"ivm model '{model}': {construct} is not supported{where}. {advice}")


class BaseRelationError(IvmError):
    """A base relation of the model cannot be read incrementally (e.g. not an Iceberg table)."""

    def __init__(self, model: str, relation: str, problem: str, hint: str = "") -> None:
        self.model = model
        self.relation = relation
        self.problem = problem
        super().__init__(f"ivm model '{model}': base relation {relation} {problem}. {hint}".strip())


class UncapturableBaseError(BaseRelationError):
    """A base relation whose changes no capture method can read (not an Iceberg table): a
    refusal, like `UnsupportedQueryError`, not a failure of reading."""


class ConcurrentCommitError(IvmError):
    """Another run committed to the state while this one refreshed it: Iceberg refused this
    run's commit, or the commit's guard on the metadata row it read left its changes out.

    >>> str(ConcurrentCommitError("m", "db.m__ivm_state", "Found conflicting files ..."))[:60]
    "ivm model 'm': another run committed to its state db.m__ivm_"
    """

    def __init__(self, model: str, state: str, detail: str) -> None:
        super().__init__(
            f"ivm model '{model}': another run committed to its state {state} while this one "
            f"refreshed it ({detail[:300]}). No change is applied twice: the state holds "
            "whole commits only, and the next run refreshes from what is committed."
        )


class InjectedFailure(IvmError):
    """Raised on purpose between refresh steps by the fault-injection hook (tests only)."""
