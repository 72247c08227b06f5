"""delta log: an ivm model's applied changes, kept for the ivm models that read it.

What it maintains. An ivm model read by other ivm models (a mart over an intermediate ivm
model, issue 12) keeps beside its state table `<db>.<model>__ivm_dlog`: after each commit to
its state, the weighted rows that commit changed in the state's data rows, tagged with the
state snapshot the commit made (`__ivm_dl_snap`), and one marker row per commit
(`__ivm_dl_mark`), which says that commit's entry is complete, rows or none:

    dlog = { (row, w, N, false) : state@N - state@P restricted to the keys N changed, w != 0 }
         + { (NULL.., 0, N, true) }                         for each commit P -> N

A reader whose watermark of the state is W, now at C, reads the state's change as the sum of
the entries of the commits between them (`capture.lineage`, compactions excepted):

    change(W, C) = sum over commits N in (W, C] of dlog[N]

without reading the state table: e.g. two refreshes of an upstream before its reader runs,
one that set `(cust 7, n 3)` to `(7, 4)` and one that deleted `(7, 4)`, give the reader
-(7, 3) +(7, 4) -(7, 4) = -(7, 3). When any commit in between has no marker (the writer
failed between its state commit and its log append, or kept no log then), the reader takes
the version diff of the state instead: exact, and it reads both versions.

Written by the upstream right after its commit, from the keys its MERGE changed (the delta
table, `commit.Prepared.changed_keys`), as the keyed version diff of the two versions: an
append to the log, never a rewrite of it. Entries of expired state snapshots are deleted when
the state's snapshots are expired (`upkeep.py`): no reader can start from those any more.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.capture import version_diff
from dbt.adapters.spark_ivm.compiler.capture.weights import weighted_log
from dbt.adapters.spark_ivm.compiler.relations import STATE_SUFFIX
from dbt.adapters.spark_ivm.compiler.runtime import upkeep
from dbt.adapters.spark_ivm.compiler.sql.layout import BOUNDED_METADATA, NO_LAYOUT, Layout
from dbt.adapters.spark_ivm.compiler.sql.state_table import ROW, drop_state_sql
from dbt.adapters.spark_ivm.compiler.sql.templates import col, sql, table

LOG_SUFFIX = "__ivm_dlog"
WEIGHT = "__ivm_w"
SNAP = "__ivm_dl_snap"
MARK = "__ivm_dl_mark"
#: Copy-on-write: the log is appended to and trimmed by whole entries, and read whole.
LOG_PROPERTIES = {
    "format-version": "2",
    "write.delete.mode": "copy-on-write",
    **BOUNDED_METADATA,
}


def log_of(state: str) -> str:
    """The delta log beside a state table.

    >>> log_of("db.orders_by_cust__ivm_state")
    'db.orders_by_cust__ivm_dlog'
    """
    assert state.endswith(STATE_SUFFIX), state
    return state[: -len(STATE_SUFFIX)] + LOG_SUFFIX


def is_model_state(relation: str) -> bool:
    """Is `relation` the state of an ivm model (which may keep a log), not one of a model's
    own sub-query or auxiliary states (`<model>__ivm_s0__ivm_state`: handed over in the run)?

    >>> is_model_state("db.up__ivm_state"), is_model_state("db.m__ivm_s0__ivm_state")
    (True, False)
    """
    return relation.endswith(STATE_SUFFIX) and "__ivm_" not in relation[: -len(STATE_SUFFIX)]


def create_sql(state: str, layout: Layout = NO_LAYOUT) -> list[str]:
    """A new, empty log with the state's columns (any old one dropped: a rebuilt state's
    snapshots are a new history), created as the model's `layout` says."""
    dlog = log_of(state)
    empty = (
        f"SELECT *, CAST(0 AS BIGINT) AS {WEIGHT}, CAST(NULL AS BIGINT) AS {SNAP}, "
        f"CAST(NULL AS BOOLEAN) AS {MARK} FROM {sql(table(state))} WHERE FALSE"
    )
    create = layout.create_sql(dlog, LOG_PROPERTIES)
    return [drop_state_sql(dlog), f"{create} AS {empty}"]


def append_sql(
    state: str,
    columns: Sequence[str],
    old: int,
    new: int,
    keys: tuple[str, Sequence[str]] | None,
    exact: Collection[str] = (),
) -> str:
    """The entry of the commit old -> new: its changed data rows (none when `keys` is None)
    and its marker."""
    marker = exp.Select().select(
        *(exp.alias_(exp.Null(), c, quoted=True) for c in columns),
        exp.alias_(exp.Literal.number(0), WEIGHT, quoted=True),
        exp.alias_(exp.Literal.number(new), SNAP, quoted=True),
        exp.alias_(exp.true(), MARK, quoted=True),
    )
    entry: exp.Expression = marker
    if keys is not None:
        diff = version_diff.log_select(state, old, new, columns, keys, exact)
        rows = (
            exp.Select()
            .select(*(col(c) for c in columns), col(WEIGHT))
            .select(exp.alias_(exp.Literal.number(new), SNAP, quoted=True))
            .select(exp.alias_(exp.false(), MARK, quoted=True))
            .from_(exp.alias_(exp.Subquery(this=diff), "__ivm_d", table=True))
            .where(exp.EQ(this=col(ROW), expression=exp.Literal.number(0)))
        )
        entry = exp.union(rows, marker, distinct=False)
    return f"INSERT INTO {sql(table(log_of(state)))} {sql(entry)}"


def _of(commits: Sequence[int]) -> exp.Expression:
    """The log's rows of these commits."""
    return exp.In(this=col(SNAP), expressions=[exp.Literal.number(s) for s in commits])


def covered_sql(state: str, commits: Sequence[int]) -> str:
    """The commits among `commits` whose entry is complete (has its marker)."""
    select = (
        exp.Select()
        .select(col(SNAP))
        .from_(table(log_of(state)))
        .where(exp.and_(col(MARK), _of(commits)))
    )
    return sql(select)


def log_select(
    state: str, commits: Sequence[int], columns: Sequence[str], exact: Collection[str] = ()
) -> exp.Select:
    """The state's change over `commits` as a compacted weighted log of `columns`."""
    rows = (
        exp.Select()
        .select(*(col(c) for c in columns))
        .select(exp.alias_(col(WEIGHT), "__ivm_cw", quoted=True))
        .from_(table(log_of(state)))
        .where(exp.and_(exp.Not(this=col(MARK)), _of(commits)))
    )
    return weighted_log(rows, columns, col("__ivm_cw"), exact)


def trim_sqls(state: str, older_than: str) -> list[str]:
    """After the state's snapshots older than `older_than` were expired: delete the entries
    of commits that are no longer snapshots of the state, then expire the log's own old
    snapshots the same way (the files of deleted entries go with them)."""
    dlog = log_of(state)
    live = f"SELECT snapshot_id FROM {sql(table(state))}.`snapshots`"
    delete = f"DELETE FROM {sql(table(dlog))} WHERE {SNAP} NOT IN ({live})"
    return [delete, upkeep.expire_sql(dlog, older_than, retain_last=1)]
