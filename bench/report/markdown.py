"""The results section of a benchmark README: machine, versions, tables, targets, plots."""

from __future__ import annotations

from typing import Any

from bench.report.figures import (
    DBT_PHASE,
    PHASES,
    STATE_COUNTS,
    STEADY_WINDOW,
    workload,
)
from bench.report.plots import FRACTION_PLOT, MODEL_PLOT, SCALE_PLOT, STEADY_PLOT
from bench.report.rebuilds import markdown_lines
from bench.report.targets import ratio_text

START = "<!-- results:start -->"
END = "<!-- results:end -->"


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


#: How `--order` reads in the results' first paragraph (runs before it: the ivm refresh first).
_ORDER = {
    "ivm-first": "the ivm refresh timed before the table rebuild in each round",
    "table-first": "the table rebuild timed before the ivm refresh in each round",
    "alternate": "the ivm refresh and the table rebuild reading each round's change first in turn",
}


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
            f"{settings.get('warmup_rounds', 0)} untimed warm-up round(s), "
            f"{_ORDER[settings.get('order', 'ivm-first')]}; the whole run took "
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
                f"{_s(r['full_median'])} | {ratio_text(r['ratio'])} | {rebuilt} |"
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
                "one MERGE; rebuild = the new state's build of a refresh run as a rebuild in "
                "place; dbt = the rest of the model's execution time (dbt's "
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
    rebuilt = markdown_lines(s.get("rebuilds") or [], s["sf"])
    if rebuilt:
        lines += ["", *rebuilt]
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
            lines.append(f"| {model} | {cells} | {ratio_text(growth)} |")
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
    resumed = steady.get("resumed") or []
    resumed_text = (
        f" Round{'s' if len(resumed) > 1 else ''} {', '.join(map(str, resumed))}: the process "
        "was killed and `--resume` went on, an ordinary refresh finishing the interrupted "
        "round (checked)."
        if resumed
        else ""
    )
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
            "over the rounds / after the last; the same for a delta log `<model>__ivm_dlog` "
            f"(kept for an ivm model that another one reads).{resumed_text}"
        ),
        "",
        (
            f"| model | first {w} (s) | last {w} (s) | last / first | data files | delete files "
            "| snapshots | metadata files |"
        ),
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for model, row in steady["models"].items():
        lines.append(
            f"| {model} | {_s(row['first'])} | {_s(row['last'])} | {ratio_text(row['ratio'])} "
            f"| {_counts(row)} |"
        )
    # a delta log is written by its model's refresh: no time of its own
    lines += [
        f"| {log} | - | - | - | {_counts(row)} |" for log, row in steady.get("logs", {}).items()
    ]
    return lines


def _counts(row: dict[str, Any]) -> str:
    return " | ".join(f"{_n(row[k]['max'])} / {_n(row[k]['last'])}" for k in STATE_COUNTS)


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
