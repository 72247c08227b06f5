"""What one harness run does: its knobs (`HarnessConfig`, from the environment) and its rounds."""

from __future__ import annotations

import os
import random
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

#: Kinds of the change rounds, in order; longer runs append "mixed" rounds. The first `mixed`
#: changes the state the build wrote (its inserts also bring keys the build had not seen);
#: `noop` must leave every state as it is; `empty` removes every group, those the refresh
#: created included; the last `mixed` refills them from nothing. A second `mixed` right after
#: the first (the plan had one) exercises nothing those two do not. A `mixed` after the
#: refill (in the plan until 2026-11-26) updates and deletes in groups that refreshes alone
#: wrote; it left the default for the suite's time (about 200 s of the harness's 1420 s):
#: `IVM_ROUND_PLAN=mixed,noop,empty,mixed,mixed` runs it.
ROUND_PLAN: tuple[str, ...] = ("mixed", "noop", "empty", "mixed")
#: The change round in which a seeded share of the ivm models (1 in `REBUILT_SHARE`) runs with
#: `ivm_refresh=full`, i.e. is rebuilt in place (`INSERT OVERWRITE` of its states, as `auto`
#: rebuilds where a refresh would cost more), so that the rounds after it refresh states
#: that a rebuild in place wrote, and a model over one reads its overwrite commit.
REBUILT_ROUND = 1
REBUILT_SHARE = 4
#: The dbt var listing the models that run with `ivm_refresh=full` (`project.model_sql`).
REBUILT_VAR = "ivm_harness_rebuilt"


@dataclass(frozen=True)
class HarnessConfig:
    """Knobs of one harness run (all settable through environment variables).

    Attributes:
        seed: `IVM_SEED` (random when unset; always printed).
        rounds: `IVM_ROUNDS`, number of change rounds after the build (default 4).
        materialization: `IVM_HARNESS_MATERIALIZATION` (default `ivm`; `table` for bring-up).
        adapter_type: `IVM_HARNESS_ADAPTER` (default `spark_ivm`; `spark` for bring-up).
        threads: `IVM_HARNESS_THREADS`, dbt threads (default 4, as dbt users run; 1 serialises
            the refreshes, e.g. to rule out a concurrency problem).
        corrupt: `IVM_HARNESS_CORRUPT=<family>[:<round>]`: after that round's dbt run, insert
            a wrong row into that family's relation (only works when it is a table), to see
            the harness fail.
        target: `IVM_TEST_TARGET`: `session` (embedded Spark, default), `thrift` (a loopback
            cluster started for the run) or `thrift://host:port` (see `tests/support/targets.py`).
        plan: `IVM_ROUND_PLAN=mixed,empty,mixed`: the kinds of the change rounds instead of
            `ROUND_PLAN` (then `rounds` is its length); the thrift subset runs a shorter plan.
        base_catalog: `IVM_HARNESS_BASE_CATALOG`: the catalog of the base tables (default:
            the current one, where the models live); the thrift subset puts them in the
            loopback server's Hadoop catalog (sources in a catalog of their own).
    """

    seed: int
    rounds: int = len(ROUND_PLAN)
    materialization: str = "ivm"
    adapter_type: str = "spark_ivm"
    threads: int = 4
    corrupt: tuple[str, int] | None = None
    target: str = "session"
    plan: tuple[str, ...] = ROUND_PLAN
    base_catalog: str | None = None

    @classmethod
    def from_env(cls, seed: int | None = None) -> HarnessConfig:
        """Read the configuration from the environment."""
        env = os.environ
        if seed is None:
            seed = int(env["IVM_SEED"]) if env.get("IVM_SEED") else secrets.randbelow(10**6)
        corrupt = None
        if env.get("IVM_HARNESS_CORRUPT"):
            name, _, rnd = env["IVM_HARNESS_CORRUPT"].partition(":")
            corrupt = (name, int(rnd) if rnd else 1)
        plan = ROUND_PLAN
        if env.get("IVM_ROUND_PLAN"):
            plan = tuple(k.strip() for k in env["IVM_ROUND_PLAN"].split(",") if k.strip())
            unknown = set(plan) - {"mixed", "noop", "empty", "all"}
            if unknown:
                raise ValueError(f"IVM_ROUND_PLAN: unknown round kinds {sorted(unknown)}")
        return cls(
            seed=seed,
            plan=plan,
            rounds=int(env.get("IVM_ROUNDS", str(len(plan)))),
            materialization=env.get("IVM_HARNESS_MATERIALIZATION", "ivm"),
            adapter_type=env.get("IVM_HARNESS_ADAPTER", "spark_ivm"),
            threads=int(env.get("IVM_HARNESS_THREADS", "4")),
            corrupt=corrupt,
            target=env.get("IVM_TEST_TARGET", "").strip() or "session",
            base_catalog=env.get("IVM_HARNESS_BASE_CATALOG", "").strip() or None,
        )


def round_kinds(change_rounds: int, plan: Sequence[str] = ROUND_PLAN) -> list[str]:
    """`build` followed by the kinds of the change rounds."""
    kinds = list(plan[:change_rounds])
    kinds += ["mixed"] * (change_rounds - len(kinds))
    return ["build", *kinds]


def rebuilt_models(seed: int, number: int, models: Sequence[str]) -> list[str]:
    """The models that round `number` rebuilds in place (`REBUILT_ROUND`): each with odds 1 in
    `REBUILT_SHARE`, drawn from the seed and its name alone, so that a run of some families
    (`-k`, a failure's replay) rebuilds the ones the full run did.

    >>> rebuilt_models(7, 1, list("abcdefgh")) == rebuilt_models(7, 1, list("hgfedcba"))
    True
    >>> set(rebuilt_models(7, 1, ["b", "c"])) == set(rebuilt_models(7, 1, list("abcd"))) - {"a", "d"}
    True
    >>> rebuilt_models(7, 2, list("abcdefgh"))
    []
    """
    if number != REBUILT_ROUND:
        return []
    return sorted(
        m for m in models if random.Random(f"{seed}/{number}/{m}").randrange(REBUILT_SHARE) == 0
    )
