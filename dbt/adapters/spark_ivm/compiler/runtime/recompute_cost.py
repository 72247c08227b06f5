"""recompute_cost: a refresh's recompute of groups weighed against a rebuild in place.

What it decides. A refresh whose delta empties a group's MIN/MAX value list (or makes a
non-decomposable aggregate exact only from its rows) recomputes the group from the base
tables (`render.recompute_select`). Which groups is known only once the delta is computed,
after `cost.py` chose to refresh. The recompute reads the inputs whole however few groups
it asks for (their keys filter rows, not files): once for the aggregates, and once more for
each MIN/MAX value list it ranks (`render.recompute_reads`), where a rebuild in place reads them
once. So, with `reads` the recompute's reads of the inputs and `rebuild` the rebuild's
estimated seconds (`cost.Estimate.rebuild`):

    recompute(reads) ~ reads * rebuild
    rebuild in place instead, under `ivm_refresh=auto`, where reads >= 2

Measured (bench/results/2026-12-05-fresh, SF 10, 1 % changed): `pricing_summary`'s
recompute of one group with two value lists took 63.8 s, its rebuild in place 21.5 s.
With one read (sums that may have lost precision, no value list) the recompute costs about a
rebuild and the MERGE writes only the changed groups, so the refresh goes on; so it does
under `incremental` (which never falls back) and where no rebuild is timed yet.

    >>> print(weigh(cost.Policy.AUTO, 24.0, groups=1, reads=3))
    the delta asks to recompute 1 group from the base tables, which reads them 3 times over (its MIN/MAX value lists); est. recompute 72.0 s, rebuild 24.0 s
    >>> weigh(cost.Policy.AUTO, 24.0, groups=5, reads=1) is None
    True
    >>> weigh(cost.Policy.INCREMENTAL, 24.0, groups=1, reads=3) is None
    True
    >>> weigh(cost.Policy.AUTO, None, groups=1, reads=3) is None
    True
"""

from __future__ import annotations

from dbt.adapters.spark_ivm.compiler.runtime import cost

#: Reads of the inputs from which a recompute costs more than a rebuild in place.
MORE_THAN_A_REBUILD = 2


def weigh(policy: cost.Policy, rebuild: float | None, groups: int, reads: int) -> str | None:
    """Why the refresh rebuilds in place instead of recomputing `groups` groups in `reads`
    reads of its inputs (None: it recomputes)."""
    if policy is not cost.Policy.AUTO or rebuild is None or reads < MORE_THAN_A_REBUILD:
        return None
    plural = "group" if groups == 1 else "groups"
    return (
        f"the delta asks to recompute {groups} {plural} from the base tables, which reads "
        f"them {reads} times over (its MIN/MAX value lists); est. recompute "
        f"{reads * rebuild:.1f} s, rebuild {rebuild:.1f} s"
    )
