"""relation_reads: what a model's run reads of the relations around it, read once.

A model's run asks of the same relations several times: its base tables' properties (is each
an Iceberg table, does it keep snapshots), its own and its stages' views (the no-change check,
then each state of the walk). A base table's properties are read once a run; a view's stand
until the executor runs its next statement (any statement may replace a view: `HeadsRead`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from dbt.adapters.spark_ivm.compiler.runtime.executor import (
    Executor,
    MetadataReader,
    StatementCounter,
    is_iceberg,
    relation_properties,
    view_properties,
)
from dbt.adapters.spark_ivm.compiler.runtime.session import HeadsRead


@dataclass(frozen=True)
class RelationReads:
    """The reads of one model's run over `executor`, each timed into `timings`; `known`
    holds the properties read, by relation (shared with the states' sessions), `heads_read`
    the views read since the last statement."""

    executor: Executor
    timings: list[tuple[str, float]]
    known: dict[str, dict[str, str]]
    heads_read: HeadsRead

    def properties_of(self, relation: str, base: bool = False) -> dict[str, str] | None:
        """The relation's properties (None: no such relation), kept for the maintainers.
        A `base` relation is mostly an Iceberg table, read from the catalog without a
        statement where the session allows, and once a run; the model's own relations are
        views."""
        if base and relation in self.known:
            return self.known[relation]
        views = None if base else self._views_read()
        if views is not None and relation in views:
            return views[relation]
        start = time.monotonic()
        try:
            if base:
                found = relation_properties(self.executor, relation)
            else:
                found = view_properties(self.executor, relation)
        except Exception:  # noqa: BLE001 - no such relation
            found = None
        finally:
            self.timings.append(("properties", time.monotonic() - start))
        if views is not None:
            views[relation] = found
        if found is not None:
            self.known[relation] = found
        return found

    def _views_read(self) -> dict[str, dict[str, str] | None] | None:
        """The view properties read since the executor's last statement (`HeadsRead`): the
        no-change check and the walk read the model's and its stages' views again; None
        where the executor counts no statements."""
        if not isinstance(self.executor, StatementCounter):
            return None
        self.heads_read.still(self.executor.statements_run())
        return self.heads_read.views

    def is_iceberg_table(self, relation: str) -> bool:
        """Is `relation` an Iceberg table (so not a view)? Asked of the session's catalog
        only, where that takes no statement (a view, or any relation through thrift: not
        known, and its database's views are listed as before); the properties found are
        kept for `chain.copy_bases`."""
        if not isinstance(self.executor, MetadataReader):
            return False
        found = self.known.get(relation)
        if found is None:
            start = time.monotonic()
            found = self.executor.iceberg_properties(relation)
            self.timings.append(("properties", time.monotonic() - start))
            if found is None:
                return False
            self.known[relation] = found
        return is_iceberg(found)
