"""commit: what follows a refresh's one commit.

The commit itself is prepared by the state's operator family (`operators/family.py`). After
it: the entry of the delta log its readers take (`capture/delta_log.py`) and the state's
upkeep (`upkeep.py`); a failure there never undoes the committed refresh.
"""

from __future__ import annotations

from dbt.adapters.spark_ivm.compiler.capture import delta_log, weights
from dbt.adapters.spark_ivm.compiler.runtime import upkeep
from dbt.adapters.spark_ivm.compiler.runtime.executor import SnapshotExpirer
from dbt.adapters.spark_ivm.compiler.runtime.session import Session


def refused_for_another_commit(error: Exception) -> str | None:
    """Iceberg's refusal of a commit because another writer committed to the same table since
    this one read it (its words), or None for any other failure.

    >>> refused_for_another_commit(RuntimeError("ValidationException: Found conflicting files "
    ...     "that can contain records matching true: [f.parquet]"))
    'Found conflicting files that can contain records matching true: [f.parquet]'
    >>> refused_for_another_commit(RuntimeError("Table or view not found")) is None
    True
    """
    text = " ".join(str(error).split())
    for words in ("Found conflicting files", "Found new conflicting delete files"):
        at = text.find(words)
        if at >= 0:
            return text[at:]
    return None


def publish(session: Session, before: int | None, keys: tuple[str, list[str]] | None) -> None:
    """Append this commit's entry to the delta log (`capture/delta_log.py`); `keys`: where
    the state keys it changed are (None: no data row changed). The refresh is committed
    already: a failure here only logs, and readers then take the version diff of the state
    for this commit."""
    state = session.target.state
    try:
        after = session.current_heads([state])[state].snapshot
        if before is None or after is None or after == before:
            raise RuntimeError(f"no commit of {state} between snapshots {before} and {after}")
        types = session.state_types()
        columns = list(types)
        exact = weights.exact_columns(types.items())
        append = delta_log.append_sql(state, columns, before, after, keys, exact)
        try:
            session.run("delta log", append)
        except Exception:  # noqa: BLE001 - no log yet (a reader was added): start one
            for statement in [*delta_log.create_sql(state, session.layout.unpartitioned()), append]:
                session.run("delta log", statement)
    except Exception as e:  # noqa: BLE001 - must not fail a committed refresh
        session.warn(
            f"ivm model '{session.model}': its delta log {delta_log.log_of(state)} "
            "misses this refresh; the models that read it take the version diff of "
            f"{state} instead: {' '.join(str(e).split())[:300]}"
        )


def keep_up(session: Session, published: bool) -> None:
    """After the commit: compact the state table and expire its old snapshots when due
    (`upkeep.py`; and the delta log's old entries where it keeps one, `published`). The
    refresh is committed already, so a failure here only warns: the run succeeds and the
    next refresh tries again. The state's properties count the failures in a row
    (`upkeep.Failures`), which the warning and `ivm_explain` show; an upkeep that works
    clears them."""
    state = session.target.state
    try:
        _keep_up(session, published)
    except Exception as e:  # noqa: BLE001 - upkeep must not fail a committed refresh
        error = " ".join(str(e).split())
        count = _count_failure(session, error)
        session.warn(
            f"ivm model '{session.model}': upkeep of {state} failed{count}, the refresh "
            f"is committed and the next one retries: {error[:300]}"
        )


def _count_failure(session: Session, error: str) -> str:
    """Record one more upkeep failure in the state's properties; how the warning says the
    count ('' when it cannot be recorded either)."""
    state = session.target.state
    try:
        before = upkeep.Failures.of(session.properties(state))
        session.run("upkeep", before.one_more(state, error))
    except Exception:  # noqa: BLE001 - the warning still says that upkeep failed
        return ""
    return f" ({before.count + 1} in a row, see ivm_explain)"


def _keep_up(session: Session, published: bool) -> None:
    """Compact and expire when due; clear the failures counted before once it worked."""
    state = session.target.state
    totals = session.snapshot_totals(state, "upkeep")
    if totals is not None:
        found = upkeep.from_summary(*totals)
        if not upkeep.may_be_due(found):
            return
        if not published and _only_expiry(found) and _expired(session):
            return
    stats = upkeep.parse_stats(session.fetch("upkeep", upkeep.stats_sql(state))[0])
    if not (upkeep.needs_compaction(stats) or upkeep.needs_expiry(stats)):
        return
    # Read once, when something is due: what a compaction runs depends on the table's format,
    # and failures counted before are cleared once it worked.
    properties = session.properties(state)
    for label, statement in upkeep.statements(state, stats, properties.get("format-version", "2")):
        session.run(label, statement)
    if published and upkeep.needs_expiry(stats):
        assert stats.committed_at is not None
        for statement in delta_log.trim_sqls(state, stats.committed_at):
            session.run("expire", statement)
    _clear_failures(session, properties)


def _only_expiry(stats: upkeep.StateStats) -> bool:
    """Is the expiry all that is due (the totals known, no compaction)?"""
    known = stats.data_files is not None and stats.delete_files is not None
    return known and not upkeep.needs_compaction(stats)


def _expired(session: Session) -> bool:
    """Expire the state's old snapshots in the driver (`SnapshotExpirer`), where only the
    expiry is due and no delta log is trimmed with it; False where it cannot (the SQL path:
    `upkeep.expire_sql`, a Spark action of about 1 s, where this took 0.1-0.2 s)."""
    expirer = session.executor
    if not isinstance(expirer, SnapshotExpirer):
        return False
    state = session.target.state
    properties = session.properties(state)
    if session.timed("expire", lambda: expirer.iceberg_expire(state, upkeep.RETAIN_LAST)) is None:
        return False
    _clear_failures(session, properties)
    return True


def _clear_failures(session: Session, properties: dict[str, str]) -> None:
    if upkeep.Failures.of(properties).count:
        session.run("upkeep", upkeep.Failures.cleared(session.target.state))
