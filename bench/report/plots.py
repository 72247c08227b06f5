"""A benchmark run's plots: refresh against rebuild by fraction, scale, model, steady state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib import ticker

from bench.report.figures import LOG_KEY

FRACTION_PLOT = "refresh_vs_fraction.png"
SCALE_PLOT = "refresh_vs_scale.png"
STEADY_PLOT = "steady_state.png"
#: Every model's refresh and rebuild side by side, per change fraction (TPC-H's 22 queries).
MODEL_PLOT = "refresh_by_model.png"


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
    and delete files after it (right axis), with its delta log's data files where it keeps
    one (read by an ivm model downstream)."""
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
        series = [
            (f"state {key.replace('_', ' ')}", row[key]["per_round"], color)
            for key, color in (("data_files", "tab:green"), ("delete_files", "tab:red"))
        ]
        log = (steady.get("logs") or {}).get(f"{model}{LOG_KEY}")
        if log:
            series.append(("delta log data files", log["data_files"]["per_round"], "tab:purple"))
        for label, counts, color in series:
            files.step(
                range(1, len(counts) + 1), counts, where="post", color=color, alpha=0.6, label=label
            )
        files.set_ylim(bottom=0)
        files.set_ylabel("files")
        lines = ax.get_legend_handles_labels()
        more = files.get_legend_handles_labels()
        ax.legend(lines[0] + more[0], lines[1] + more[1], fontsize="small", loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
