"""aux_choice: whether a model keeps an auxiliary state, chosen once and read back after.

A flat model (no sub-query state) is its own state alone, or an auxiliary state A over the
facts and then the model over A and the dimension (`optimize/aux_state.py`; `chain.py`
maintains the two in order). The choice is made when the model is planned (first run,
changed SQL, `--full-refresh`, or a changed `ivm_aux_states` setting) and recorded in the
view's properties with the rewritten queries, so a refresh does not plan the model again to
find it:

    ivm_aux_states (model config, else the DBT_SPARK_IVM_AUX_STATES environment variable):
      auto    an auxiliary state where the split is exact and the largest fact table holds
              at least 10x the dimension's rows;
      always  wherever the split is exact;
      never   (default, until a refresh with one is measured faster) the flat plan.

The choice recorded is "<mode>:<digest of the SQL it was made for>" (`CHOICE`): it stands
while both are the run's (a digest by either formula, `SqlDigest.accepts`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from dbt.adapters.spark_ivm.compiler import render
from dbt.adapters.spark_ivm.compiler.errors import Refusal
from dbt.adapters.spark_ivm.compiler.optimize import aux_state
from dbt.adapters.spark_ivm.compiler.plan import Plan
from dbt.adapters.spark_ivm.compiler.runtime.base_tables import total_records
from dbt.adapters.spark_ivm.compiler.runtime.chain_states import AUX_SQL, CHOICE, TOP_SQL
from dbt.adapters.spark_ivm.compiler.runtime.executor import Executor, MetadataReader
from dbt.adapters.spark_ivm.compiler.runtime.state_meta import SqlDigest
from dbt.adapters.spark_ivm.compiler.sql.templates import sql, table


@dataclass(frozen=True)
class Chosen:
    """The model's states: flat (`queries` None), or the auxiliary state's SQL then the
    model's over it (`queries`); `choice` is what the view records, and `reason` why the
    choice rebuilds the model (None: it does not), changed from the mode `before`."""

    choice: str
    queries: tuple[str, str] | None = None
    reason: str | None = None
    before: str = ""


def _made(props: dict[str, str], digest: SqlDigest) -> tuple[str, bool]:
    """The mode of the choice the view records (`props`), and whether it was made for the
    SQL of `digest` (`CHOICE`: "<mode>:<digest>").

    >>> d = SqlDigest.of("select 1", "5")
    >>> _made({CHOICE: f"auto:{d}"}, d), _made({}, d)
    (('auto', True), ('', False))
    """
    mode, _, made_for = props.get(CHOICE, "").partition(":")
    return mode, digest.accepts(made_for or None)


def recorded(props: dict[str, str], mode: str, digest: SqlDigest) -> Chosen | None:
    """The choice the model's view records (`props`) where it was made for this SQL and
    setting; None: choose.

    >>> d = SqlDigest.of("select 1", "5")
    >>> flat = recorded({CHOICE: f"never:{d}"}, "never", d)
    >>> flat.choice == f"never:{d}", flat.queries, flat.reason
    (True, None, None)
    >>> recorded({CHOICE: f"never:{d}"}, "auto", d) is None  # the setting changed
    True
    >>> recorded({CHOICE: f"never:{d}"}, "never", SqlDigest.of("select 2", "5")) is None
    True
    """
    made_mode, same_sql = _made(props, digest)
    if made_mode != mode or not same_sql:
        return None
    choice = f"{mode}:{digest}"
    if AUX_SQL not in props:
        return Chosen(choice)
    if TOP_SQL in props:
        return Chosen(choice, (props[AUX_SQL], props[TOP_SQL]))
    return None


def choose(
    *,
    props: dict[str, str],
    mode: str,
    digest: SqlDigest,
    plan_model: Callable[[], Plan],
    plan_aux: Callable[[str], Plan],
    state_of_aux: str,
    rows: Callable[[list[str]], dict[str, int | None]],
    log: Callable[[str], None],
) -> Chosen:
    """Choose the model's states under `mode` (`plan_model` plans the model, `plan_aux` an
    auxiliary state's SQL, whose state table is `state_of_aux`; `rows` reads tables' row
    counts); said in `log` where the choice is a real one. A choice that differs from the
    one the view records for this SQL (`props`) rebuilds the model, `Chosen.reason`."""
    choice = f"{mode}:{digest}"
    had_aux = AUX_SQL in props
    # Made for this SQL: only the setting changed since, and a different choice rebuilds.
    made_mode, same_sql = _made(props, digest)
    # Planned here only to choose: with `never` there is nothing to choose.
    split = aux_state.split(plan_model()) if mode != "never" else Refusal("ivm_aux_states=never")
    dim_rows = fact_rows = None
    possible = not isinstance(split, Refusal)
    if not isinstance(split, Refusal):
        sizes = rows([split.dimension, *split.facts])
        dim_rows = sizes.get(split.dimension)
        fact_rows = max((sizes.get(f) or 0 for f in split.facts), default=0) or None
        if mode == "auto" and not aux_state.choose(dim_rows, fact_rows):
            split = Refusal(
                f"the facts ({fact_rows} rows) are not 10x {split.dimension} ({dim_rows} rows)"
            )
    if isinstance(split, Refusal):
        if mode == "always" or possible:
            log(f"no aux state: {split}")
        reason = "it no longer keeps an auxiliary state" if same_sql and had_aux else None
        return Chosen(choice, reason=reason, before=made_mode)
    top_sql = split.top_sql(render.view_select(plan_aux(split.aux_sql), state_of_aux))
    log(aux_state.describe(split, dim_rows, fact_rows))
    reason = "it now keeps an auxiliary state" if same_sql and not had_aux else None
    return Chosen(choice, (split.aux_sql, top_sql), reason, made_mode)


def snapshot_rows(
    executor: Executor, relations: list[str], timings: list[tuple[str, float]]
) -> dict[str, int | None]:
    """Each relation's row count from its current snapshot's summary (no data read; None
    where unknown): from the driver where the executor reads each table's metadata there
    (`MetadataReader`; not e.g. a table of another catalog), else one statement over the
    tables' `snapshots` and `refs`. The time goes in `timings` as "sizes"."""
    start = time.monotonic()
    try:
        if isinstance(executor, MetadataReader):
            read = [executor.iceberg_snapshot_totals(r) for r in relations]
            totals = [t for t in read if t is not None]
            if len(totals) == len(relations):
                return {r: total_records(t[1]) for r, t in zip(relations, totals)}
        return _rows_by_sql(executor, relations)
    finally:
        timings.append(("sizes", time.monotonic() - start))


def _rows_by_sql(executor: Executor, relations: list[str]) -> dict[str, int | None]:
    # The current snapshot is the one `main` points at: after a rollback it is not the one
    # committed last.
    parts = [
        f"SELECT {i} AS i, CAST(s.summary['total-records'] AS BIGINT) AS n "
        f"FROM {sql(table(r))}.`snapshots` AS s JOIN {sql(table(r))}.`refs` AS b "
        "ON s.snapshot_id = b.snapshot_id WHERE b.name = 'main'"
        for i, r in enumerate(relations)
    ]
    try:
        found_rows = executor.fetch(" UNION ALL ".join(parts))
    except Exception:  # noqa: BLE001 - sizes unknown: no auxiliary state
        return {}
    found = {int(i): n for i, n in found_rows}
    return {r: (None if found.get(i) is None else int(found[i])) for i, r in enumerate(relations)}
