"""Bag (multiset) comparison of two collected results, with a float tolerance.

Rows are plain tuples.  Non-float values compare exactly (Decimal by value, NULL equals
NULL); float columns compare within a relative tolerance of 1e-9, plus a small absolute
tolerance (1e-8) so that sums which cancel to about zero do not count as different: the
harness's doubles reach ~1e4 and sums of ~100 of them round at ~1e-10 per addition, so a sum
whose true value is ~0 legitimately comes out as e.g. 3e-10 in one summation order and 0.0 in
another.  1e-8 is still ~1e-12 relative to the summed values.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

REL_TOL = 1e-9
ABS_TOL = 1e-8

Row = tuple[Any, ...]


def floats_close(a: Any, b: Any, rel_tol: float = REL_TOL, abs_tol: float = ABS_TOL) -> bool:
    """Equality for float cells: NULL = NULL, NaN = NaN, else `math.isclose`."""
    if a is None or b is None:
        return a is None and b is None
    fa, fb = float(a), float(b)
    if math.isnan(fa) or math.isnan(fb):
        return math.isnan(fa) and math.isnan(fb)
    return math.isclose(fa, fb, rel_tol=rel_tol, abs_tol=abs_tol)


def _hashable(value: Any) -> Hashable:
    """Make a cell usable as a Counter key (lists/dicts from complex types become tuples)."""
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, float) and math.isnan(value):
        return "NaN"  # NaN != NaN would make every NaN row unique
    return value


def row_sort_key(row: Row) -> tuple[Any, ...]:
    """Total order over rows with NULLs and mixed types (for stable greedy matching/printing)."""
    return tuple((v is None, type(v).__name__, v if v is not None else 0) for v in row)


@dataclass
class BagDiff:
    """What differs between an expected and an actual bag of rows.

    `missing`: rows the SELECT returns more often than the relation (row, how many more);
    `extra`: rows the relation holds more often than the SELECT returns.
    """

    missing: list[tuple[Row, int]] = field(default_factory=list)
    extra: list[tuple[Row, int]] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        """True when the two bags are equal (within the float tolerance)."""
        return not self.missing and not self.extra


def compare_bags(
    expected: Sequence[Sequence[Any]],
    actual: Sequence[Sequence[Any]],
    float_cols: Sequence[int] = (),
) -> BagDiff:
    """Compare two bags of rows; `float_cols` are the positions compared with a tolerance.

    Exact matches cancel first; the leftovers are paired greedily when their non-float cells
    are equal and all their float cells are close.
    """
    exp = Counter(tuple(_hashable(v) for v in r) for r in expected)
    act = Counter(tuple(_hashable(v) for v in r) for r in actual)
    missing = exp - act
    extra = act - exp
    if float_cols and missing and extra:
        fset = set(float_cols)

        def exact_part(row: Row) -> tuple[Any, ...]:
            return tuple(v for i, v in enumerate(row) if i not in fset)

        extra_by_key: dict[tuple[Any, ...], list[Row]] = {}
        for row, n in sorted(extra.items(), key=lambda kv: row_sort_key(kv[0])):
            extra_by_key.setdefault(exact_part(row), []).extend([row] * n)
        still_missing: Counter[Row] = Counter()
        for row, n in sorted(missing.items(), key=lambda kv: row_sort_key(kv[0])):
            candidates = extra_by_key.get(exact_part(row), [])
            for _ in range(n):
                for pos, cand in enumerate(candidates):
                    if all(floats_close(row[i], cand[i]) for i in float_cols):
                        del candidates[pos]
                        break
                else:
                    still_missing[row] += 1
        missing = still_missing
        extra = Counter(r for rows in extra_by_key.values() for r in rows)
    return BagDiff(
        missing=sorted(missing.items(), key=lambda kv: row_sort_key(kv[0])),
        extra=sorted(extra.items(), key=lambda kv: row_sort_key(kv[0])),
    )


def format_rows(columns: Sequence[str], rows: Sequence[Row], limit: int = 60) -> str:
    """Render rows as a small aligned text table (for failure messages)."""
    cells = [[repr(v) if isinstance(v, str) else str(v) for v in r] for r in rows[:limit]]
    header = list(columns)
    widths = [len(h) for h in header]
    for r in cells:
        for i, c in enumerate(r):
            if i < len(widths):
                widths[i] = max(widths[i], len(c))
            else:
                widths.append(len(c))
    header += [f"c{i}" for i in range(len(header), len(widths))]
    lines = ["  " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=False))]
    lines += ["  " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) for r in cells]
    if len(rows) > limit:
        lines.append(f"  ... {len(rows) - limit} more rows")
    return "\n".join(lines)


def format_diff(columns: Sequence[str], diff: BagDiff, limit: int = 25) -> str:
    """Human-readable diff: rows missing from the relation and extra rows, with counts."""
    parts: list[str] = []
    for title, entries in (
        (
            "MISSING from the relation (the SELECT returns them, the relation does not)",
            diff.missing,
        ),
        ("EXTRA in the relation (the SELECT does not return them)", diff.extra),
    ):
        if not entries:
            continue
        total = sum(n for _, n in entries)
        parts.append(f"{title}: {total} row(s), {len(entries)} distinct")
        shown = [(n, *row) for row, n in entries[:limit]]
        parts.append(format_rows(["#times", *columns], shown, limit=limit))
        if len(entries) > limit:
            parts.append(f"  ... {len(entries) - limit} more distinct rows")
    return "\n".join(parts)
