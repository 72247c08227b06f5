"""commit: the one commit of a refresh, and what follows it.

Before the commit: the delta table (per state key: the change and the stored counts it
meets), the groups whose MIN/MAX must be recomputed, and the MERGE that folds both into the
state table together with the metadata row's new watermarks (`state_merge.merge_sql`; a
window model swaps its affected partitions instead, `window.py`). After it: the state's row count
for the log line, the entry of the delta log its readers take (`capture/delta_log.py`) and
the state's upkeep (`upkeep.py`); a failure there never undoes the committed refresh.

`FAIL_ENV` names a step after which a test makes the refresh fail (`STEPS`), to show that
a failure between any two statements leaves the previous state and the next run exact.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler import render
from dbt.adapters.spark_ivm.compiler.capture import delta_log, weights
from dbt.adapters.spark_ivm.compiler.errors import InjectedFailure
from dbt.adapters.spark_ivm.compiler.operators import state_merge, window
from dbt.adapters.spark_ivm.compiler.operators.delta import TermRenderer
from dbt.adapters.spark_ivm.compiler.plan import Plan
from dbt.adapters.spark_ivm.compiler.runtime import upkeep
from dbt.adapters.spark_ivm.compiler.runtime.facts import MetadataReader, describe_columns
from dbt.adapters.spark_ivm.compiler.runtime.logs import LogWriter
from dbt.adapters.spark_ivm.compiler.sql.templates import sql, table

FAIL_ENV = "DBT_SPARK_IVM_FAIL_AFTER"
STEPS = ("capture", "logs", "delta", "recompute", "commit")


@dataclass(kw_only=True)
class CommitWriter(LogWriter):
    """Prepares a refresh's commit and does what follows it (see the module docstring)."""

    # An auxiliary state (`chain.py`): which (delta table, key columns) hold every state key
    # this refresh changed.
    changed_keys: tuple[str, list[str]] | None = None
    # Other ivm models read this one: keep its delta log (`capture/delta_log.py`).
    publish: bool = False
    data_changed: bool = False  # this run's commit changed data rows of the state
    state_types: dict[str, str] | None = None  # the state table's columns, once described

    def _checkpoint(self, step: str) -> None:
        if os.environ.get(FAIL_ENV) == step:
            raise InjectedFailure(f"ivm model '{self.model}': injected failure after step {step}")

    def _state_types(self) -> dict[str, str]:
        """The state table's column types (lower-case names), from the session's catalog
        where it can answer (no statement: a DESCRIBE cost 0.04-0.056 s), else DESCRIBEd."""
        if self.state_types is None:
            state = self.target.state
            found = None
            if isinstance(self.executor, MetadataReader):
                reader = self.executor
                found = self._timed("describe", lambda: reader.iceberg_columns(state))
            if found is None:
                found = describe_columns(
                    self.timed_fetch("describe", f"DESCRIBE TABLE {sql(table(state))}")
                )
            self.state_types = {n.lower(): t for n, t in found}
        return self.state_types

    def _delta_commit(
        self, the_plan: Plan, renderer: TermRenderer, compacted: exp.Select, new_meta: str
    ) -> tuple[str | None, tuple[int, int, int, int]]:
        """The delta table, the recomputed groups and the MERGE that folds them in; the
        state rows it inserts, updates, deletes and recomputes (no MERGE when none)."""
        delta = self.target.delta
        select = state_merge.delta_table_select(the_plan, compacted, self.target.state)
        self._compute_scratch("delta", delta, select)
        self.changed_keys = (delta, list(the_plan.key_columns))
        stats = self.timed_fetch("stats", state_merge.stats_sql(delta))[0]
        inserted, updated, deleted, recomputed = (int(x or 0) for x in stats)
        self._checkpoint("delta")
        if not (inserted or updated or deleted):
            return None, (0, 0, 0, recomputed)
        recomputed_table = None
        if recomputed:
            recomputed_table = self.target.recomputed
            select = render.recompute_select(the_plan, renderer, delta)
            self._compute_scratch("recompute", recomputed_table, select)
        self._checkpoint("recompute")
        commit = state_merge.merge_sql(
            the_plan, self.target.state, delta, recomputed_table, new_meta, self._state_types()
        )
        return commit, (inserted, updated, deleted, recomputed)

    def _window_commit(
        self, the_plan: Plan, renderer: TermRenderer, compacted: exp.Select, new_meta: str
    ) -> tuple[str | None, int, int]:
        """The affected partitions, their recomputed rows and the MERGE that swaps them in
        (`window.py`); (None, 0, 0) when no change reaches a window's input."""
        state = self.target.state
        affected = self.target.delta
        self._compute_scratch("delta", affected, window.affected_select(the_plan, compacted))
        self.changed_keys = (affected, list(the_plan.key_columns))
        self._checkpoint("delta")
        recomputed = self.target.recomputed
        select = window.recompute_select(the_plan, renderer, affected)
        self._compute_scratch("recompute", recomputed, select)
        stats = self.timed_fetch("stats", window.stats_sql(affected, recomputed))[0]
        partitions, rows = (int(x or 0) for x in stats)
        self._checkpoint("recompute")
        if not partitions:
            return None, 0, 0
        types = self._state_types()
        commit = window.merge_sql(the_plan, state, affected, recomputed, new_meta, types)
        return commit, partitions, rows

    def _state_rows(self) -> int:
        """The new state's data rows, for the log line: its snapshot's `total-records` less
        the metadata row where the JVM reads it (no Spark job; the state was just written,
        so it has no delete file), else counted."""
        state = self.target.state
        if isinstance(self.executor, MetadataReader):
            reader = self.executor
            totals = self._timed("count", lambda: reader.iceberg_snapshot_totals(state))
            records = None if totals is None else totals[1].get("total-records")
            if records is not None and records.isdigit() and int(records) >= 1:
                return int(records) - 1
        select = f"SELECT COUNT(*) FROM {sql(table(state))} WHERE {render.ROW} = 0"
        return int(self.timed_fetch("count", select)[0][0])

    def _publish(self, before: int | None) -> None:
        """Append this commit's entry to the delta log (`capture/delta_log.py`). The refresh
        is committed already: a failure here only logs, and readers then take the version
        diff of the state for this commit."""
        state = self.target.state
        try:
            after = self.current_heads([state])[state].snapshot
            if before is None or after is None or after == before:
                raise RuntimeError(f"no commit of {state} between snapshots {before} and {after}")
            types = self._state_types()
            columns = list(types)
            exact = weights.exact_columns(types.items())
            keys = self.changed_keys if self.data_changed else None
            append = delta_log.append_sql(state, columns, before, after, keys, exact)
            try:
                self._run("delta log", append)
            except Exception:  # noqa: BLE001 - no log yet (a reader was added): start one
                for statement in [*delta_log.create_sql(state), append]:
                    self._run("delta log", statement)
        except Exception as e:  # noqa: BLE001 - must not fail a committed refresh
            self.warn(
                f"ivm model '{self.model}': its delta log {delta_log.log_of(state)} "
                "misses this refresh; the models that read it take the version diff of "
                f"{state} instead: {' '.join(str(e).split())[:300]}"
            )

    def _upkeep(self) -> None:
        """After the commit: compact the state table and expire its old snapshots when due
        (`upkeep.py`). The refresh is committed already, so a failure here only logs: the
        run succeeds and the next refresh tries again."""
        state = self.target.state
        try:
            if isinstance(self.executor, MetadataReader):
                reader = self.executor
                totals = self._timed("upkeep", lambda: reader.iceberg_snapshot_totals(state))
                if totals is not None and not upkeep.may_be_due(upkeep.from_summary(*totals)):
                    return
            stats = upkeep.parse_stats(self.timed_fetch("upkeep", upkeep.stats_sql(state))[0])
            for label, statement in upkeep.statements(state, stats):
                self._run(label, statement)
            if self.publish and upkeep.needs_expiry(stats):
                assert stats.committed_at is not None
                for statement in delta_log.trim_sqls(state, stats.committed_at):
                    self._run("expire", statement)
        except Exception as e:  # noqa: BLE001 - upkeep must not fail a committed refresh
            self.warn(
                f"ivm model '{self.model}': upkeep of {state} failed, the refresh "
                f"is committed and the next one retries: {' '.join(str(e).split())[:300]}"
            )
