"""merge_scope: the state rows a refresh's MERGE can match, named by the changed keys.

A keyed state's commit matches the delta table's rows to the state's by their keys
(`operators/state_merge.py`). Spark plans that MERGE as the state RIGHT OUTER JOIN the delta
(the delta's unmatched rows are inserted), and an outer join can only broadcast its other
side: every run shuffled and sorted the whole state to meet a few changed groups. The keys
the delta holds say which state rows can match, so the MERGE's condition also says it, as
literals Spark pushes into the state's scan:

    match' = match AND (s.__ivm_row__ = 1 OR AND_k (s.k IS NULL OR s.k IN keys_k(Δ)))

over each key column k whose type `pruning.KeyCodec` carries exactly (its listed values and
their bounds; `pruning.range_filter`). A state row a delta row matches has each of its keys
among that column's keys of the delta, or NULL (`<=>` matches NULL with NULL), so it passes:
the MERGE changes the same rows. The metadata row passes by its first disjunct. A 1.5 M-row
state's MERGE of 100 changed keys took 1.3-1.6 s and 0.55-0.6 s with them listed, 15 M rows
6.2-6.5 s and 1.3-1.8 s, 150 k rows 0.7-1.0 s and 0.6-0.7 s (bench/results/2026-12-07-floor).
Collecting the keys is one more small job over the delta table, so only states of at least
`MIN_ROWS` rows (their snapshot's record count) get it, and only where the changed keys are
few enough to list.

    >>> stats = ("3", "9", ["9", "3"], None, None, [])  # k1: only NULLs changed
    >>> found = scope_filter({"k0": "bigint", "k1": "string"}, stats, "s")
    >>> print(found.sql("spark").replace("`", ""))
    (s.k0 IS NULL OR (s.k0 BETWEEN CAST('3' AS BIGINT) AND CAST('9' AS BIGINT) AND s.k0 IN \
(CAST('3' AS BIGINT), CAST('9' AS BIGINT)))) AND (s.k1 IS NULL OR FALSE)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.environment import number_from_env
from dbt.adapters.spark_ivm.compiler.optimize.pruning import (
    MAX_LISTED_KEYS,
    exact_key_type,
    key_stats_sql,
    parse_key_stats,
    range_filter,
)
from dbt.adapters.spark_ivm.compiler.sql.templates import col

#: States of fewer rows are merged without the keys listed (`DBT_SPARK_IVM_MERGE_SCOPE_MIN_ROWS`
#: sets it; 0: every keyed state's MERGE lists them).
MIN_ROWS = 100_000
MIN_ROWS_ENV = "DBT_SPARK_IVM_MERGE_SCOPE_MIN_ROWS"


def min_rows() -> int:
    """The state rows from which a MERGE lists its keys (`MIN_ROWS`, or the environment's).

    >>> min_rows()
    100000
    """
    return number_from_env(MIN_ROWS_ENV, MIN_ROWS, 0, "state rows")


def listable(columns: Sequence[str], types: Mapping[str, str]) -> dict[str, str]:
    """The key columns whose values can be listed exactly (`pruning.exact_key_type`), with
    their types (`types`: by lower-case name).

    >>> listable(["k0", "K1"], {"k0": "double", "k1": "date"})
    {'K1': 'date'}
    """
    found = {c: types.get(c.lower(), "") for c in columns}
    return {c: dtype for c, dtype in found.items() if exact_key_type(dtype)}


def scope_filter(dtypes: Mapping[str, str], stats: Sequence, alias: str) -> exp.Expression:
    """The condition on `alias`'s rows (see the module) from one `pruning.key_stats_sql` row
    `stats` over the `listable` columns `dtypes` (in its order)."""
    columns = list(dtypes)
    ranges = parse_key_stats(stats, columns, True, dtypes)
    return exp.and_(
        *(
            exp.paren(
                exp.or_(
                    exp.Is(this=col(c, alias), expression=exp.Null()),
                    range_filter(col(c, alias), dtypes[c], ranges[c]),
                )
            )
            for c in columns
        )
    )


def merge_scope(
    relation: str,
    columns: Sequence[str],
    alias: str,
    *,
    changed: int,
    types: Mapping[str, str],
    state_rows: Callable[[], int | None],
    fetch: Callable[[str], list[tuple]],
) -> exp.Expression | None:
    """The scope of a MERGE whose source rows are `relation`'s, keyed by `columns`, `changed`
    of them changing a state row, into a state with column `types` of `state_rows()` rows
    (None: not known; read only where the rest allows a scope): None where more keys changed
    than `pruning.MAX_LISTED_KEYS` (their runs span most of a key space they are spread
    over: at SF 10 the 20,000 customers of a 0.1 % change made the MERGE 0.3 s slower, not
    faster), no key is listable, or the state is smaller than `min_rows()` (or of unknown
    size, unless that is 0).

    >>> merge_scope("d", ["k"], "s", changed=500, types={"k": "int"},
    ...             state_rows=lambda: 10**6, fetch=lambda statement: [])  # too many keys
    >>> merge_scope("d", ["k"], "s", changed=5, types={"k": "double"},
    ...             state_rows=lambda: 10**6, fetch=lambda statement: [])  # none listable
    """
    if changed > MAX_LISTED_KEYS:
        return None
    dtypes = listable(columns, types)
    if not dtypes:
        return None
    least = min_rows()
    if least > 0:
        rows = state_rows()
        if rows is None or rows < least:
            return None
    found = fetch(key_stats_sql(relation, list(dtypes), True, dtypes))
    return scope_filter(dtypes, found[0], alias)
