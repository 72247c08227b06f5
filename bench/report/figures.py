"""A benchmark run's figures: medians per model and fraction, phases, steady state, targets.

Pure functions over the `results.json` that bench/run.py writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.report import rebuilds
from bench.report.rebuilds import median as _median
from bench.report.targets import targets

#: Steady state: the median refresh of the last STEADY_WINDOW rounds at most
#: `targets.STEADY_TARGET` times that of the first STEADY_WINDOW (the target is reported from
#: 2 x STEADY_WINDOW rounds); a soak of SOAK_ROUNDS or more compares the first and last SOAK_WINDOW.
STEADY_WINDOW = 10
SOAK_ROUNDS = 200
SOAK_WINDOW = 100
#: The state table's file counts recorded after every steady-state refresh (metadata files:
#: the `*.metadata.json` in its folder, absent from runs before they were counted).
STATE_COUNTS = ("data_files", "delete_files", "snapshots", "metadata_files")
#: A delta log's counts in a steady round's `state` are keyed by its model's name and this.
LOG_KEY = " delta log"


def steady_window(rounds: int) -> int:
    """How many rounds at each end a steady state compares.

    >>> steady_window(50), steady_window(1000), steady_window(5)
    (10, 100, 5)
    """
    window = SOAK_WINDOW if rounds >= SOAK_ROUNDS else STEADY_WINDOW
    return min(window, rounds)


def workload(results: dict[str, Any]) -> str:
    """`star` (bench/datagen.py's tables, four models; runs before the option) or `tpch`."""
    return str(results.get("workload") or results["settings"].get("workload") or "star")


def _ratio(full: float | None, ivm: float | None) -> float | None:
    return full / ivm if full is not None and ivm else None


def _model_times(rounds: Sequence[dict[str, Any]], side: str, model: str) -> list[float]:
    name = model if side == "ivm" else f"{model}_full"
    return [r[side]["models"][name]["seconds"] for r in rounds if name in r[side]["models"]]


def _by_fraction(run: dict[str, Any], model: str) -> list[dict[str, Any]]:
    fractions = sorted({r["fraction"] for r in run["rounds"]})
    rows = []
    for f in fractions:
        rounds = [r for r in run["rounds"] if r["fraction"] == f]
        ivm = _model_times(rounds, "ivm", model)
        full = _model_times(rounds, "full", model)
        messages = [
            r["ivm"]["models"][model]["message"] for r in rounds if model in r["ivm"]["models"]
        ]
        rows.append(
            {
                "fraction": f,
                # refreshes `ivm_refresh=auto` (or `full`) ran as rebuilds in place
                "rebuilt": sum(1 for m in messages if m.startswith(REBUILT_IN_PLACE)),
                "refreshes": len(messages),
                "ivm": ivm,
                "full": full,
                "ivm_median": _median(ivm),
                "full_median": _median(full),
                "ratio": _ratio(_median(full), _median(ivm)),
            }
        )
    return rows


#: How the message of a refresh that its policy ran as a rebuild starts (`cost.py`).
REBUILT_IN_PLACE = "rebuilt in place"

#: Refresh statements (the plugin's DBT_SPARK_IVM_TIMINGS labels) grouped by what they do.
PHASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "plan",
        ("properties", "describe", "describe query", "describe args", "meta", "sizes", "views"),
    ),
    ("pin", ("refresh", "snapshot", "metadata", "upstream")),
    (
        "capture",
        (
            "changelog",
            "touched files",
            "stage files",
            "position deletes",
            "log",
            "count",
            "snapshot diff",
        ),
    ),
    ("key ranges", ("key ranges",)),
    ("delta", ("render", "keys", "bracket", "delta", "stats")),
    ("recompute", ("recompute",)),
    ("commit", ("commit", "delta log")),  # a delta log's entry is written with the commit
    ("upkeep", ("upkeep", "compact", "expire")),
    ("cleanup", ("drop scratch",)),
    ("rebuild", ("build state",)),  # a rebuild in place (`ivm_refresh` auto or full)
)
#: The rest of a model's execution time: dbt's materialization around the refresh.
DBT_PHASE = "dbt"


def _phase_of(label: str) -> str:
    # An auxiliary state's statements ("aux <label>") and a sub-query state's ("s<i> <label>")
    # count in the phase of their label.
    label = label.removeprefix("aux ")
    first, _, rest = label.partition(" ")
    if rest and first[:1] == "s" and first[1:].isdigit():
        label = rest
    head = "log" if label.startswith("log ") else label
    return next((name for name, labels in PHASES if head in labels), "other")


def phase_times(model: dict[str, Any]) -> dict[str, float]:
    """One model's refresh time split into PHASES (+ `dbt`: execution time outside them)."""
    out = {name: 0.0 for name, _ in PHASES}
    for label, seconds in model.get("steps", []):
        phase = _phase_of(label)
        out[phase] = out.get(phase, 0.0) + seconds
    out[DBT_PHASE] = max(0.0, model["seconds"] - sum(out.values()))
    return out


def _phases(run: dict[str, Any], models: Sequence[str]) -> dict[str, dict[str, dict[str, float]]]:
    """Median seconds per phase, per change fraction and model."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for f in sorted({r["fraction"] for r in run["rounds"]}):
        rounds = [r for r in run["rounds"] if r["fraction"] == f]
        per_model: dict[str, dict[str, float]] = {}
        for m in models:
            split = [phase_times(r["ivm"]["models"][m]) for r in rounds if m in r["ivm"]["models"]]
            if split:
                per_model[m] = {k: _median([x.get(k, 0.0) for x in split]) for k in split[0]}
        out[f"{f:g}"] = per_model
    return out


def _state_counts(rounds: Sequence[dict[str, Any]], key: str) -> dict[str, Any]:
    """Per STATE_COUNTS of the relation recorded as `key` in the rounds' `state`: the most,
    the last and every round's count."""
    found: dict[str, Any] = {}
    for count in STATE_COUNTS:
        values = [
            r["state"][key][count]
            for r in rounds
            if r.get("state", {}).get(key, {}).get(count) is not None
        ]
        found[count] = {
            "max": max(values, default=None),
            "last": values[-1] if values else None,
            "per_round": values,
        }
    return found


def steady_summary(run: dict[str, Any], models: Sequence[str]) -> dict[str, Any] | None:
    """The steady-state rounds of `run` (None: there were none): per model the median refresh
    of the first and of the last STEADY_WINDOW rounds, and the state table's file counts."""
    steady = run.get("steady") or {}
    rounds = steady.get("rounds") or []
    if not rounds:
        return None
    window = steady_window(len(rounds))
    per_model: dict[str, dict[str, Any]] = {}
    for m in models:
        times = _model_times(rounds, "ivm", m)
        first, last = _median(times[:window]), _median(times[-window:])
        row: dict[str, Any] = {
            "seconds": times,
            "first": first,
            "last": last,
            "ratio": _ratio(last, first),
        }
        per_model[m] = row | _state_counts(rounds, m)
    logs = sorted({k for r in rounds for k in r.get("state", {}) if k.endswith(LOG_KEY)})
    checks = [c for r in rounds for c in r["checks"]]
    return {
        "sf": run["sf"],
        "fraction": steady["fraction"],
        "rounds": len(rounds),
        "window": window,
        "models": per_model,
        "logs": {k: _state_counts(rounds, k) for k in logs},
        "checks": {"run": len(checks), "passed": sum(1 for c in checks if c["ok"])},
        # rounds a kill interrupted and `--resume` finished with an ordinary refresh
        "resumed": [r["round"] for r in rounds if r.get("resumed")],
        "base_delete_files": {
            c["table"]: c.get("delete_files_after") for c in rounds[-1]["changes"]
        },
    }


def summarize(results: dict[str, Any]) -> dict[str, Any]:
    """Medians per model and fraction, no-change times, the scale series, checks, targets."""
    settings, models = results["settings"], results["models"]
    runs = results["runs"]
    main = next(r for r in runs if r["sf"] == settings["sf"])
    scale_fraction = settings["scale_fraction"]
    by_fraction = {m: _by_fraction(main, m) for m in models}
    no_change = {
        m: _median([inv["models"][m]["seconds"] for inv in main["no_change"]]) for m in models
    }
    by_scale: dict[str, list[dict[str, Any]]] = {m: [] for m in models}
    for run in sorted(runs, key=lambda r: r["sf"]):
        for m in models:
            row = next((x for x in _by_fraction(run, m) if x["fraction"] == scale_fraction), None)
            if row is not None:
                by_scale[m].append({"sf": run["sf"], **row})

    def steady_rounds(run: dict[str, Any]) -> list[dict[str, Any]]:
        return (run.get("steady") or {}).get("rounds") or []

    all_checks = [
        c
        for run in runs
        for c in [
            *run["build"]["checks"],
            *(
                c
                for r in [*run.get("warmup", []), *run["rounds"], *steady_rounds(run)]
                for c in r["checks"]
            ),
        ]
    ]
    loads = [
        r[side]["load_average"]
        for run in runs
        for r in [*run["rounds"], *steady_rounds(run)]
        for side in ("ivm", "full")
        if r.get(side) and "load_average" in r[side]
    ]
    rebuilt = [
        f"SF {run['sf']:g} {r['fraction']:.1%} rep {r['rep'] + 1}: {name}"
        for run in runs
        for r in run["rounds"]
        for name, m in r["ivm"]["models"].items()
        if m["message"].startswith("built")
    ] + [
        f"SF {run['sf']:g} steady state round {r['round']}: {name}"
        for run in runs
        for r in steady_rounds(run)
        for name, m in r["ivm"]["models"].items()
        if m["message"].startswith("built")
    ]
    summary = {
        "sf": settings["sf"],
        "by_fraction": by_fraction,
        "phases": _phases(main, models),
        "rebuilds": rebuilds.rows(main["rounds"], models),
        "no_change": no_change,
        "no_change_overhead": _median([inv["overhead"] for inv in main["no_change"]]),
        "by_scale": by_scale,
        "builds": {
            f"{run['sf']:g}": {
                m: {
                    "ivm": run["build"]["ivm"]["models"][m]["seconds"],
                    "full": run["build"]["full"]["models"][f"{m}_full"]["seconds"],
                }
                for m in models
            }
            for run in runs
        },
        "checks": {"run": len(all_checks), "passed": sum(1 for c in all_checks if c["ok"])},
        "rebuilt_during_refresh": rebuilt,
        "load_average": {"median": _median(loads), "max": max(loads, default=None)},
        "steady": steady_summary(main, models),
    }
    summary["targets"] = targets(summary, settings, workload(results))
    return summary
