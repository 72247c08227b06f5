"""Figures of a benchmark run: medians, targets, plots and the results section of the README.

    .venv/bin/python bench/report.py bench/results/results.json [--readme bench/README.md]

Reads `results.json` (written by bench/run.py), writes `refresh_vs_fraction.png` and
`refresh_vs_scale.png` (and `steady_state.png` for a run with `--steady`, `refresh_by_model.png`
for the TPC-H workload) beside it and replaces the part of the README between
`<!-- results:start -->` and `<!-- results:end -->`. Self-contained (no bench imports), so
it also runs as a plain script.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib import ticker

START = "<!-- results:start -->"
END = "<!-- results:end -->"
FRACTION_PLOT = "refresh_vs_fraction.png"
SCALE_PLOT = "refresh_vs_scale.png"
STEADY_PLOT = "steady_state.png"
#: Every model's refresh and rebuild side by side, per change fraction (TPC-H's 22 queries).
MODEL_PLOT = "refresh_by_model.png"

#: Issue 11's targets, by the main scale factor (reported, never asserted):
#: every model at least this much faster than its rebuild at this change fraction,
MIN_RATIO = {1.0: (0.001, 1.5)}
#: every model's refresh at most this many seconds at this change fraction,
MAX_SECONDS = {10.0: (0.001, 2.0)}
#: every model faster than its rebuild at this change fraction.
FASTER_AT = {10.0: 0.01}
NO_CHANGE_TARGET = 0.3  # seconds per model
GROWTH_TARGET = 1.3  # ivm time at 0.1 % at the largest SF / at the smallest
#: Steady state: the median refresh of the last STEADY_WINDOW rounds at most STEADY_TARGET
#: times that of the first STEADY_WINDOW (the target is reported from 2 x STEADY_WINDOW rounds);
#: a soak of SOAK_ROUNDS or more compares the first and last SOAK_WINDOW.
STEADY_WINDOW = 10
SOAK_ROUNDS = 200
SOAK_WINDOW = 100
STEADY_TARGET = 1.2
#: The state table's file counts recorded after every steady-state refresh (metadata files:
#: the `*.metadata.json` in its folder, absent from runs before they were counted).
STATE_COUNTS = ("data_files", "delete_files", "snapshots", "metadata_files")


def steady_window(rounds: int) -> int:
    """How many rounds at each end a steady state compares.

    >>> steady_window(50), steady_window(1000), steady_window(5)
    (10, 100, 5)
    """
    window = SOAK_WINDOW if rounds >= SOAK_ROUNDS else STEADY_WINDOW
    return min(window, rounds)


# ------------------------------------------------------------------------------------------------
# figures
# ------------------------------------------------------------------------------------------------


def workload(results: dict[str, Any]) -> str:
    """`star` (bench/datagen.py's tables, four models; runs before the option) or `tpch`."""
    return str(results.get("workload") or results["settings"].get("workload") or "star")


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


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
    ("capture", ("changelog", "touched files", "stage files", "log", "count", "snapshot diff")),
    ("key ranges", ("key ranges",)),
    ("delta", ("render", "keys", "bracket", "delta", "stats")),
    ("recompute", ("recompute",)),
    ("commit", ("commit",)),
    ("upkeep", ("upkeep", "compact", "expire")),
    ("cleanup", ("drop scratch",)),
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
        for key in STATE_COUNTS:
            counts = [
                r["state"][m][key]
                for r in rounds
                if r.get("state", {}).get(m, {}).get(key) is not None
            ]
            row[key] = {
                "max": max(counts, default=None),
                "last": counts[-1] if counts else None,
                "per_round": counts,
            }
        per_model[m] = row
    checks = [c for r in rounds for c in r["checks"]]
    return {
        "sf": run["sf"],
        "fraction": steady["fraction"],
        "rounds": len(rounds),
        "window": window,
        "models": per_model,
        "checks": {"run": len(checks), "passed": sum(1 for c in checks if c["ok"])},
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
    # issue 11's targets are the star models'; the TPC-H run reports its figures only
    summary["targets"] = targets(summary, settings) if workload(results) == "star" else []
    return summary


def targets(summary: dict[str, Any], settings: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets with what was measured (reported, never asserted)."""
    found: list[dict[str, Any]] = []
    sf, fraction = settings["sf"], settings["scale_fraction"]

    # (change fraction, figure, target, measured, met) for every model at this SF
    checks: list[tuple[float, str, str, Callable[[dict], str], Callable[[dict], bool]]] = []
    if sf in MIN_RATIO:
        wanted, ratio = MIN_RATIO[sf]
        checks.append(
            (
                wanted,
                "ratio",
                f"ivm >= {ratio:g}x faster than full at SF {sf:g}, {wanted:.1%} changed",
                lambda row: _x(row["ratio"]),
                lambda row: row["ratio"] >= ratio,
            )
        )
    if sf in MAX_SECONDS:
        wanted, seconds = MAX_SECONDS[sf]
        checks.append(
            (
                wanted,
                "ivm_median",
                f"ivm refresh <= {seconds:g} s at SF {sf:g}, {wanted:.1%} changed",
                lambda row: f"{row['ivm_median']:.2f} s (full / ivm: {_x(row['ratio'])})",
                lambda row: row["ivm_median"] <= seconds,
            )
        )
    if sf in FASTER_AT:
        checks.append(
            (
                FASTER_AT[sf],
                "ratio",
                f"ivm faster than full at SF {sf:g}, {FASTER_AT[sf]:.1%} changed",
                lambda row: _x(row["ratio"]),
                lambda row: row["ratio"] > 1,
            )
        )
    for model, rows in summary["by_fraction"].items():
        for wanted, figure, target, measured, met in checks:
            row = next((x for x in rows if x["fraction"] == wanted), None)
            if row is not None and row[figure] is not None:
                found.append(
                    {"target": f"{model}: {target}", "measured": measured(row), "met": met(row)}
                )
    worst = max(((s, m) for m, s in summary["no_change"].items() if s is not None), default=None)
    if worst is not None:
        found.append(
            {
                "target": f"no-change refresh <= {NO_CHANGE_TARGET:g} s per model "
                "(beyond dbt's start-up)",
                "measured": f"{worst[0]:.2f} s (slowest: {worst[1]})",
                "met": worst[0] <= NO_CHANGE_TARGET,
            }
        )
    for model, rows in summary["by_scale"].items():
        if len(rows) > 1 and rows[0]["ivm_median"]:
            growth = rows[-1]["ivm_median"] / rows[0]["ivm_median"]
            found.append(
                {
                    "target": f"{model}: ivm refresh at {fraction:.1%} grows <= "
                    f"{GROWTH_TARGET:g}x from SF {rows[0]['sf']:g} to SF {rows[-1]['sf']:g}",
                    "measured": _x(growth),
                    "met": growth <= GROWTH_TARGET,
                }
            )
    steady = summary.get("steady")
    if steady and steady["rounds"] >= 2 * steady["window"]:
        window = steady["window"]
        for model, row in steady["models"].items():
            if row["ratio"] is not None:
                found.append(
                    {
                        "target": f"{model}: steady state, median refresh of the last "
                        f"{window} of {steady['rounds']} rounds within "
                        f"{STEADY_TARGET:g}x of the first {window}",
                        "measured": _x(row["ratio"]),
                        "met": row["ratio"] <= STEADY_TARGET,
                    }
                )
    return found


# ------------------------------------------------------------------------------------------------
# plots
# ------------------------------------------------------------------------------------------------


def _grid(count: int) -> tuple[Any, list[Any]]:
    cols = 1 if count == 1 else 2 if count <= 8 else 4
    rows = (count + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5.5 * cols, 4 * rows), squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax in flat[count:]:
        ax.set_visible(False)
    return fig, flat[:count]


def _axes(ax: Any, xs: list[float], title: str, xlabel: str, labels: list[str]) -> None:
    """Log-log axes with the measured x values as ticks and plain numbers."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(xs, labels=labels)
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(ticker.NullFormatter())
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("seconds (median, min-max)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")


def _line(ax: Any, xs: list[float], rows: list[dict[str, Any]], side: str, **style: Any) -> None:
    medians = [r[f"{side}_median"] for r in rows]
    low = [m - min(r[side]) for m, r in zip(medians, rows, strict=True)]
    high = [max(r[side]) - m for m, r in zip(medians, rows, strict=True)]
    ax.errorbar(xs, medians, yerr=[low, high], marker="o", capsize=3, **style)


def plot_fractions(summary: dict[str, Any], path: Path) -> None:
    """Per model: refresh and full rebuild time against the change fraction (log-log)."""
    models = list(summary["by_fraction"])
    fig, axes = _grid(len(models))
    for ax, model in zip(axes, models, strict=True):
        rows = [r for r in summary["by_fraction"][model] if r["ivm"] and r["full"]]
        if not rows:  # only steady-state rounds (`--fractions ''`)
            ax.text(
                0.5, 0.5, "no change fractions in this run", ha="center", transform=ax.transAxes
            )
            ax.set_title(model)
            continue
        xs = [r["fraction"] * 100 for r in rows]
        _line(ax, xs, rows, "ivm", label="ivm refresh", color="tab:blue")
        _line(ax, xs, rows, "full", label="full rebuild (table)", color="tab:red")
        still = summary["no_change"].get(model)
        if still is not None:
            ax.axhline(still, color="tab:blue", linestyle=":", label="ivm, no change")
        _axes(
            ax,
            xs,
            f"{model} (SF {summary['sf']:g})",
            "rows changed in every base table",
            [f"{x:g}%" for x in xs],
        )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_scale(summary: dict[str, Any], path: Path) -> None:
    """Per model: refresh and full rebuild time against the scale factor, fixed fraction."""
    models = list(summary["by_scale"])
    fig, axes = _grid(len(models))
    for ax, model in zip(axes, models, strict=True):
        rows = summary["by_scale"][model]
        if not rows:
            ax.text(0.5, 0.5, "no scale series in this run", ha="center", transform=ax.transAxes)
            ax.set_title(model)
            continue
        xs = [r["sf"] for r in rows]
        fraction = rows[0]["fraction"] if rows else 0
        _line(ax, xs, rows, "ivm", label="ivm refresh", color="tab:blue")
        _line(ax, xs, rows, "full", label="full rebuild (table)", color="tab:red")
        _axes(ax, xs, f"{model} ({fraction:.1%} changed)", "scale factor", [f"{x:g}" for x in xs])
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_models(summary: dict[str, Any], path: Path) -> None:
    """Per change fraction: every model's median refresh and full rebuild as bars side by side
    (log scale; the whiskers: min-max of the repetitions), the no-change refresh as a dash."""
    models = list(summary["by_fraction"])
    fractions = sorted({r["fraction"] for rows in summary["by_fraction"].values() for r in rows})
    fig, axes = plt.subplots(
        max(1, len(fractions)),
        1,
        figsize=(max(8.0, 0.55 * len(models) + 2), 4.2 * max(1, len(fractions))),
        squeeze=False,
    )
    xs = list(range(len(models)))
    width = 0.4
    for ax, fraction in zip([row[0] for row in axes], fractions or [None], strict=True):
        if fraction is None:
            ax.text(
                0.5, 0.5, "no change fractions in this run", ha="center", transform=ax.transAxes
            )
            continue
        for side, offset, color, label in (
            ("ivm", -width / 2, "tab:blue", "ivm refresh"),
            ("full", width / 2, "tab:red", "full rebuild (table)"),
        ):
            rows = [
                next((r for r in summary["by_fraction"][m] if r["fraction"] == fraction), None)
                for m in models
            ]
            medians = [r[f"{side}_median"] if r and r[side] else float("nan") for r in rows]
            low = [
                m - min(r[side]) if r and r[side] else 0 for m, r in zip(medians, rows, strict=True)
            ]
            high = [
                max(r[side]) - m if r and r[side] else 0 for m, r in zip(medians, rows, strict=True)
            ]
            ax.bar(
                [x + offset for x in xs],
                medians,
                width,
                yerr=[low, high],
                capsize=2,
                color=color,
                label=label,
            )
        still = [summary["no_change"].get(m) for m in models]
        ax.scatter(
            [x - width / 2 for x, v in zip(xs, still, strict=True) if v is not None],
            [v for v in still if v is not None],
            marker="_",
            s=120,
            color="black",
            label="ivm, no change",
            zorder=3,
        )
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        ax.set_xticks(xs, labels=models, rotation=90 if len(models) > 30 else 0)
        ax.set_xlim(-0.6, len(models) - 0.4)
        ax.set_ylabel("seconds (median, min-max)")
        ax.set_title(f"SF {summary['sf']:g}, {fraction:.1%} of the base tables changed")
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_steady(steady: dict[str, Any], path: Path) -> None:
    """Per model: the refresh time of every steady-state round, and the state table's data
    and delete files after it (right axis)."""
    models = list(steady["models"])
    fig, axes = _grid(len(models))
    for ax, model in zip(axes, models, strict=True):
        row = steady["models"][model]
        ax.plot(
            range(1, len(row["seconds"]) + 1), row["seconds"], color="tab:blue", label="refresh"
        )
        ax.set_ylim(bottom=0)
        ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
        ax.set_xlabel("round")
        ax.set_ylabel("ivm refresh (s)")
        ax.set_title(f"{model} (SF {steady['sf']:g}, {steady['fraction']:.1%} changed)")
        ax.grid(True, alpha=0.3)
        files = ax.twinx()
        for key, color in (("data_files", "tab:green"), ("delete_files", "tab:red")):
            counts = row[key]["per_round"]
            files.step(
                range(1, len(counts) + 1),
                counts,
                where="post",
                color=color,
                alpha=0.6,
                label=f"state {key.replace('_', ' ')}",
            )
        files.set_ylim(bottom=0)
        files.set_ylabel("files")
        lines = ax.get_legend_handles_labels()
        more = files.get_legend_handles_labels()
        ax.legend(lines[0] + more[0], lines[1] + more[1], fontsize="small", loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ------------------------------------------------------------------------------------------------
# markdown
# ------------------------------------------------------------------------------------------------


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _x(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}x" if value >= 10 else f"{value:.1f}x" if value >= 1 else f"{value:.2f}x"


def markdown(results: dict[str, Any], image_dir: str) -> str:
    """The results section: machine, versions, tables of medians, targets, plots."""
    s, settings = results["summary"], results["settings"]
    tpch = workload(results) == "tpch"
    load = s.get("load_average") or {"median": None, "max": None}
    if tpch:
        data = (
            f"The 22 TPC-H queries (`--workload tpch`) on dbgen's data at scale factor "
            f"{settings['sf']:g}; each change round is TPC-H's RF1 (new orders with their line "
            "items) and RF2 (orders deleted with their line items) plus updates of customers, "
            "parts, suppliers, supply costs, nations and orders (`bench/tpch.py`), the rows "
            "picked by a hash of their key"
        )
    else:
        data = f"Scale factor {settings['sf']:g}, `--pattern {settings['pattern']}`"
    machine, versions = results["machine"], results["versions"]
    lines = [
        (
            f"Measured {results['date']} on {machine['cpu']}, {machine['cores']} cores, "
            f"{machine['memory_gib']} GiB RAM, {machine['os']}; Spark `{machine['spark_master']}`, "
            f"driver memory {machine['driver_memory']}, {settings['shuffle_partitions']} shuffle "
            "partitions, 1 dbt thread."
        ),
        "",
        "Versions: "
        + ", ".join(f"{k} {v}" for k, v in versions.items() if k != "plugin_commit")
        + f"; plugin commit {versions.get('plugin_commit', '?')}.",
        "",
        (
            f"{data}, "
            f"`--base-write-mode {settings.get('base_write_mode', 'copy-on-write')}`, seed "
            f"{settings['seed']}, median of {settings['reps']} repetitions after "
            f"{settings.get('warmup_rounds', 0)} untimed warm-up round(s); the whole run took "
            f"{results['seconds'] / 60:.0f} min. Equality checks (ivm model = its table twin): "
            f"{s['checks']['passed']} of {s['checks']['run']} passed. The machine's 1-minute load "
            f"average when a timed `dbt run` started: median {_s(load['median'])}, max "
            f"{_s(load['max'])} (other work on the machine shows here). The ivm models ran "
            f"with `ivm_refresh={settings.get('refresh', 'incremental')}`"
            + (
                ": *ran as rebuild* counts the refreshes it ran as rebuilds in place."
                if settings.get("refresh", "incremental") != "incremental"
                else "."
            )
        ),
        "",
        f"### Refresh against full rebuild, SF {s['sf']:g}",
        "",
        "| model | changed | ivm refresh (s) | full rebuild (s) | full / ivm | ran as rebuild |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for model, rows in s["by_fraction"].items():
        for r in rows:
            rebuilt = f"{r['rebuilt']} of {r['refreshes']}" if "rebuilt" in r else "?"
            lines.append(
                f"| {model} | {r['fraction']:.1%} | {_s(r['ivm_median'])} | "
                f"{_s(r['full_median'])} | {_x(r['ratio'])} | {rebuilt} |"
            )
    lines += [
        "",
        (
            "Times are dbt's per-model execution times. No change: an ivm refresh right after "
            "the previous one (dbt's start-up and parsing, the same for every invocation, took "
            f"{_s(s['no_change_overhead'])} s per `dbt run` on top):"
        ),
        "",
        "| model | no-change refresh (s) | ivm build (s) | table build (s) |",
        "| --- | ---: | ---: | ---: |",
    ]
    builds = s["builds"][f"{s['sf']:g}"]
    for model, seconds in s["no_change"].items():
        lines.append(
            f"| {model} | {_s(seconds)} | {_s(builds[model]['ivm'])} | "
            f"{_s(builds[model]['full'])} |"
        )
    phases = s.get("phases") or {}
    if phases:
        names = [name for name, _ in PHASES] + [DBT_PHASE]
        if any("other" in split for per_model in phases.values() for split in per_model.values()):
            names.append("other")
        lines += [
            "",
            f"### Where a refresh spends its time, SF {s['sf']:g}",
            "",
            (
                "Median seconds per phase of the ivm refresh (the plugin's per-statement "
                "timings, `DBT_SPARK_IVM_TIMINGS=1`): plan = table properties, DESCRIBEs and "
                "the state's metadata row; pin = current snapshot ids; capture = Iceberg "
                "changelog read and compacted into a cached log per changed table; key ranges "
                "= the join keys the logs touch (pruning); delta = the view delta and its "
                "counts (and the brackets of factored terms); recompute = MIN/MAX groups whose extreme was deleted; commit = the "
                "one MERGE; dbt = the rest of the model's execution time (dbt's "
                "materialization around the refresh)."
            ),
            "",
            "| model | changed | " + " | ".join(names) + " |",
            "| --- | ---: |" + " ---: |" * len(names),
        ]
        for fraction, per_model in phases.items():
            for model, split in per_model.items():
                cells = " | ".join(_s(split.get(n)) for n in names)
                lines.append(f"| {model} | {float(fraction):.1%} | {cells} |")
    series = [r["sf"] for r in next(iter(s["by_scale"].values()), [])]
    if len(series) > 1:
        head = " | ".join(f"SF {sf:g} ivm / full (s)" for sf in series)
        lines += [
            "",
            f"### Scale: {settings['scale_fraction']:.1%} changed",
            "",
            f"| model | {head} | ivm growth |",
            "| --- |" + " ---: |" * (len(series) + 1),
        ]
        for model, rows in s["by_scale"].items():
            cells = " | ".join(f"{_s(r['ivm_median'])} / {_s(r['full_median'])}" for r in rows)
            growth = (
                rows[-1]["ivm_median"] / rows[0]["ivm_median"]
                if len(rows) > 1 and rows[0]["ivm_median"]
                else None
            )
            lines.append(f"| {model} | {cells} | {_x(growth)} |")
    steady = s.get("steady")
    if steady:
        lines += ["", *_steady_markdown(steady, settings)]
    if s["targets"]:
        lines += ["", "### Targets", "", "| target | measured | met |", "| --- | --- | --- |"]
        lines += [
            f"| {t['target']} | {t['measured']} | {'yes' if t['met'] else '**no**'} |"
            for t in s["targets"]
        ]
    if s["rebuilt_during_refresh"]:
        lines += [
            "",
            "Rebuilt instead of refreshed (the refresh time is a rebuild): "
            + "; ".join(s["rebuilt_during_refresh"]),
        ]
    made = "loaded in (s)" if tpch else "generated in (s)"
    lines += ["", "### Data", ""]
    if tpch:
        lines += [
            "dbgen (DuckDB's `tpch` extension) writes one parquet file a table (kept for the "
            "next run in the work directory); each Iceberg table is a `CREATE TABLE AS SELECT` "
            "of it. dbgen took "
            + ", ".join(
                f"{r.get('load', {}).get('dbgen_seconds', 0):.1f} s at SF {r['sf']:g}"
                for r in results["runs"]
            )
            + ".",
            "",
        ]
    lines += [
        f"| SF | table | rows | data files | {made} |",
        "| ---: | --- | ---: | ---: | ---: |",
    ]
    for run in results["runs"]:
        for t in run["load"]["tables"]:
            lines.append(
                f"| {run['sf']:g} | {t['name']} | {t['rows']:,} | {t['files']} | "
                f"{t['seconds']:.1f} |"
            )
    if tpch:
        lines += ["", f"![refresh and rebuild of every model]({image_dir}/{MODEL_PLOT})"]
    lines += [
        "",
        f"![refresh time against change fraction]({image_dir}/{FRACTION_PLOT})",
        "",
        f"![refresh time against scale factor]({image_dir}/{SCALE_PLOT})",
    ]
    if steady:
        lines += [
            "",
            f"![steady state: refresh time and state files per round]({image_dir}/{STEADY_PLOT})",
        ]
    return "\n".join(lines)


def _steady_markdown(steady: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    """The steady-state section: refresh medians of the first and last rounds, state files."""
    n, w = steady["rounds"], steady["window"]
    overlap = " (they overlap: fewer than twice as many rounds ran)" if n < 2 * w else ""
    checks = steady["checks"]
    base = steady.get("base_delete_files") or {}
    base_text = (
        "; the base tables' live delete files after the last round: "
        + ", ".join(f"{t} {v}" for t, v in base.items())
        if any(base.values())
        else ""
    )
    every = settings.get("steady_check_every", STEADY_WINDOW)
    lines = [
        f"### Steady state, SF {steady['sf']:g}",
        "",
        (
            f"{n} change rounds in a row after the rounds above, {steady['fraction']:.1%} of "
            f"every base table changed in each, only the ivm refresh run and timed; the table "
            f"twins rebuilt and checked every {every} rounds and after the last "
            f"({checks['passed']} of {checks['run']} checks passed{base_text}). First / last "
            f"{w}: median refresh of rounds 1-{w} and {n - w + 1}-{n}{overlap}. State files: "
            "the state table `<model>__ivm_state`'s current snapshot after each refresh (data "
            "and delete files), its snapshots and the metadata files in its folder, the most "
            "over the rounds / after the last."
        ),
        "",
        (
            f"| model | first {w} (s) | last {w} (s) | last / first | data files | delete files "
            "| snapshots | metadata files |"
        ),
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for model, row in steady["models"].items():
        counts = " | ".join(f"{_n(row[k]['max'])} / {_n(row[k]['last'])}" for k in STATE_COUNTS)
        lines.append(
            f"| {model} | {_s(row['first'])} | {_s(row['last'])} | {_x(row['ratio'])} | {counts} |"
        )
    return lines


def _n(value: int | None) -> str:
    return "-" if value is None else str(value)


def replace_section(text: str, section: str) -> str:
    """`text` with the part between the markers replaced (markers appended when missing)."""
    block = f"{START}\n{section}\n{END}"
    if START in text and END in text:
        head, _, rest = text.partition(START)
        _, _, tail = rest.partition(END)
        return f"{head}{block}{tail}"
    return f"{text.rstrip()}\n\n{block}\n" if text.strip() else f"{block}\n"


def write_all(results_path: Path, readme: Path) -> list[Path]:
    """Plots beside `results_path`, and the results section of `readme`."""

    results = json.loads(results_path.read_text())
    results["summary"] = summarize(results)  # from the raw figures, with this code
    out = results_path.parent
    plot_fractions(results["summary"], out / FRACTION_PLOT)
    plot_scale(results["summary"], out / SCALE_PLOT)
    written = [out / FRACTION_PLOT, out / SCALE_PLOT]
    if workload(results) == "tpch":
        plot_models(results["summary"], out / MODEL_PLOT)
        written.append(out / MODEL_PLOT)
    if results["summary"].get("steady"):
        plot_steady(results["summary"]["steady"], out / STEADY_PLOT)
        written.append(out / STEADY_PLOT)
    image_dir = os.path.relpath(out.resolve(), readme.resolve().parent)
    old = readme.read_text() if readme.exists() else ""
    readme.write_text(replace_section(old, markdown(results, image_dir)))
    return [*written, readme]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, help="results.json of a benchmark run")
    parser.add_argument(
        "--readme",
        type=Path,
        default=None,
        help="bench/README.md; for a TPC-H run (`--workload tpch`) README.md beside the JSON",
    )
    args = parser.parse_args(argv)
    readme = args.readme
    if readme is None:
        tpch = workload(json.loads(args.results.read_text())) == "tpch"
        readme = args.results.parent if tpch else Path(__file__).resolve().parent
        readme = readme / "README.md"
    for path in write_all(args.results, readme):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
