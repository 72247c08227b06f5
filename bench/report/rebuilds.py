"""Where a rebuilt run's time goes: the rebuild statement against the table's run, and the
time around it.

Under `ivm_refresh=auto` a run that would lose to a rebuild rebuilds its state in place, so
issue 37's "no slower than 1.1x its rebuild" is a question about rebuilt runs: is the
state's statement (`build state`, the one `INSERT OVERWRITE`) dearer than the table's
`CREATE OR REPLACE TABLE .. AS`, or is it the time around it (table properties, the
metadata row, snapshot reads: the run's other timed steps; then the plugin's Python and
dbt's materialization, untimed)? Each round, one side reads the change's files first and
finds them cold (`bench.options.tables_first`); so the statement is set against the table
separately for the rounds the ivm run read first and those the table did.

    ivm seconds = statement + timed around + untimed around
    ceiling     = table / (table + timed around + untimed around)

The ceiling is the ratio a rebuilt run would have if its statement cost exactly the
table's run: where it is below 1/1.1, the time around the statement alone misses the target.

    >>> model = {"seconds": 1.2, "message": "rebuilt in place (...)",
    ...          "steps": [["properties", 0.02], ["meta", 0.03], ["build state", 1.0]]}
    >>> split(model)
    Split(statement=1.0, timed=0.05, untimed=0.15)
    >>> split({"seconds": 0.5, "message": "refreshed (...)", "steps": []}) is None
    True
    >>> rounds = [
    ...     {"fraction": 0.001, "first": "ivm", "ivm": {"models": {"m": model}},
    ...      "full": {"models": {"m_full": {"seconds": 0.8}}}},
    ...     {"fraction": 0.001, "first": "full", "ivm": {"models": {"m": model}},
    ...      "full": {"models": {"m_full": {"seconds": 1.0}}}},
    ... ]
    >>> row = rows(rounds, ["m"])[0]
    >>> row["rebuilt"], row["statement_ivm_first"], row["statement_table_first"]
    (2, 1.25, 1.0)
    >>> round(row["ceiling"], 2)  # table 0.9 s, 0.2 s around the statement
    0.82
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: The step of a rebuilt run that is its state's statement (`runtime/build.py`).
STATEMENT = "build state"


@dataclass(frozen=True)
class Split:
    """A rebuilt run's seconds: its statement, the other timed steps, the rest."""

    statement: float
    timed: float
    untimed: float


def split(model: dict[str, Any]) -> Split | None:
    """A model's run split as the module says; None where the run did not rebuild in place
    (a refresh, or a run that timed no statement)."""
    if not str(model.get("message", "")).startswith("rebuilt"):
        return None
    steps = model.get("steps") or []
    statement = sum(s for label, s in steps if label == STATEMENT)
    if statement <= 0:
        return None
    timed = sum(s for label, s in steps if label != STATEMENT)
    return Split(
        statement, round(timed, 6), round(max(0.0, model["seconds"] - statement - timed), 6)
    )


def median(values: Sequence[float]) -> float | None:
    """The median of `values`, None of none (the report's figures use it too)."""
    return statistics.median(values) if values else None


def rows(rounds: Sequence[dict[str, Any]], models: Sequence[str]) -> list[dict[str, Any]]:
    """Per change fraction and model with a rebuilt run: medians of the rebuilt runs (see the
    module), the statement over the same round's table run by who read the change first."""
    out = []
    for fraction in sorted({r["fraction"] for r in rounds}):
        for model in models:
            runs = []
            for r in rounds:
                if r["fraction"] != fraction or model not in r["ivm"]["models"]:
                    continue
                full = r["full"]["models"].get(f"{model}_full")
                found = split(r["ivm"]["models"][model])
                if found is not None and full is not None and full["seconds"] > 0:
                    runs.append((r.get("first"), found, full["seconds"]))
            if not runs:
                continue
            table = median([t for _, _, t in runs])
            timed = median([s.timed for _, s, _ in runs])
            untimed = median([s.untimed for _, s, _ in runs])
            assert table is not None and timed is not None and untimed is not None
            out.append(
                {
                    "model": model,
                    "fraction": fraction,
                    "rebuilt": len(runs),
                    "statement": median([s.statement for _, s, _ in runs]),
                    "table": table,
                    "timed": timed,
                    "untimed": untimed,
                    "statement_ivm_first": median(
                        [s.statement / t for first, s, t in runs if first == "ivm"]
                    ),
                    "statement_table_first": median(
                        [s.statement / t for first, s, t in runs if first == "full"]
                    ),
                    "ceiling": table / (table + timed + untimed),
                }
            )
    return out


def _x(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}x"


def markdown_lines(found: Sequence[dict[str, Any]], sf: float) -> list[str]:
    """The README section of `rows`, with the counts the target turns on."""
    if not found:
        return []
    lines = [
        f"### Where a rebuilt run's time goes, SF {sf:g}",
        "",
        (
            "Runs `auto` rebuilt in place, medians: the state's statement (`build state`), the "
            "table's whole run, the statement over the same round's table run where the ivm "
            "run read the change first and where the table did, the run's other timed steps "
            "(properties, metadata row, snapshots), the rest of its time (the plugin's Python, "
            "dbt), and the ratio a rebuilt run would have if its statement cost what the "
            "table's run does (`bench/report/rebuilds.py`)."
        ),
        "",
        (
            "| model | changed | rebuilt | statement (s) | table (s) | statement / table, ivm "
            "first | table first | timed around (s) | untimed (s) | ceiling |"
        ),
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in found:
        lines.append(
            f"| {r['model']} | {r['fraction']:.1%} | {r['rebuilt']} | {r['statement']:.2f} | "
            f"{r['table']:.2f} | {_x(r['statement_ivm_first'])} | "
            f"{_x(r['statement_table_first'])} | {r['timed']:.2f} | {r['untimed']:.2f} | "
            f"{_x(r['ceiling'])} |"
        )
    below = [r for r in found if r["ceiling"] < 1 / 1.1]
    firsts = [r["statement_ivm_first"] for r in found if r["statement_ivm_first"] is not None]
    seconds = [r["statement_table_first"] for r in found if r["statement_table_first"] is not None]
    lines += [
        "",
        (
            f"{len(below)} of {len(found)} ceilings are below 1/1.1 (the time around the "
            "statement alone misses the 1.1x target); the statement over the table's run, "
            f"median: {_x(median(firsts)) or 'none'} where the ivm run read the change "
            f"first, {_x(median(seconds)) or 'none'} where the table did."
        ),
    ]
    return lines
