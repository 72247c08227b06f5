"""explain: a model's dataflow in words (`dbt run-operation ivm_explain --args '{model: m}'`).

Read-only. It plans the model as its next `dbt run` would, from the SQL its relation records
(`ivm.sql`; or a SELECT given to it), through the same steps as `chain.py`: the views it reads
are replaced by their queries, tables without snapshots are read through their copies, and
the model's `Dataflow` (`dataflow.py`: sub-query states innermost first, or the auxiliary
state recorded by the last build, then the model) is printed and walked as `walk.py` runs
it, each state planned over the ones before it. For each state it prints the operators
(joins and the rule each outer join or aggregate is maintained by), the state table's rows
and the watermark of each input against the input's current snapshot, which delta terms are
pruned by key, and whether an auxiliary state is kept, possible, or why not (the words of a
plan and of a state's runs: `explain_lines.py`). A refused construct is named as `dbt run`
would name it. Nothing is created, changed or dropped.

Example (an aggregate over a join of two Iceberg tables; the lines as printed, abridged):

    ivm model 'revenue' (analytics.revenue): a view over its state table
      dataflow of 'revenue': 1 state
        1. the model's state analytics.revenue
      state analytics.revenue__ivm_state: 25 state rows
        input db.nations: snapshot 120 reflected, now 131 (changed since the last run)
        input db.orders: snapshot 8812 reflected, current (no change waiting)
        runs (UTC, oldest first):
          2026-11-28 03:10:05 build 9.1 s, rows +24 ~0 -0; snapshots db.nations 117, db.orders 8812
          2026-11-28 03:12:40 refresh 2.3 s, rows +1 ~3 -0, 1204331 bytes changed; snapshots db.nations 120
        upkeep: failed 2 time(s) in a row, ... (only while it fails: upkeep.Failures)
        next run: refresh (ivm_refresh=auto): the change's files are 2 % of db.nations's ...
        input o = db.orders
        input n = db.nations
        join: INNER JOIN n ON o.nation = n.id (sum over inputs: dR1 x R2_old + R1_new x dR2)
        operator: aggregate by n.name, one state row per group
          COUNT(*): counting, count(*) = __ivm_count__, the group's row count: ...
          MAX(o.total): extremes, min(x) / max(x) as a ranked list ... [state columns ...]
        key pruning: a change of db.orders reads n only at n.id = the change's o.nation
        auxiliary state: not kept (ivm_aux_states=never); possible: aux state A(o.nation) ...
"""

from __future__ import annotations

from dataclasses import dataclass

from dbt.adapters.spark_ivm.compiler import dataflow, render
from dbt.adapters.spark_ivm.compiler.errors import IvmError, Refusal, UnsupportedQueryError
from dbt.adapters.spark_ivm.compiler.frontend import stages
from dbt.adapters.spark_ivm.compiler.optimize import aux_state
from dbt.adapters.spark_ivm.compiler.plan import Plan
from dbt.adapters.spark_ivm.compiler.relations import Target
from dbt.adapters.spark_ivm.compiler.runtime import cost, explain_lines, run_history, upkeep
from dbt.adapters.spark_ivm.compiler.runtime.chain import ChainMaintainer
from dbt.adapters.spark_ivm.compiler.runtime.chain_states import AUX_SQL, STAGES, TOP_SQL
from dbt.adapters.spark_ivm.compiler.runtime.fallback import FALLBACK
from dbt.adapters.spark_ivm.compiler.runtime.refresh import Maintainer
from dbt.adapters.spark_ivm.compiler.runtime.session import Head
from dbt.adapters.spark_ivm.compiler.runtime.state_meta import StateMeta
from dbt.adapters.spark_ivm.compiler.runtime.view import MODEL_SQL
from dbt.adapters.spark_ivm.compiler.sql import state_table
from dbt.adapters.spark_ivm.compiler.sql.templates import sql, table


@dataclass
class Explainer:
    """Plans one model read-only over `chain`'s executor and says what it found."""

    chain: ChainMaintainer
    out: list[str]
    # Raise a refusal instead of printing it (`empty.py` checks a model this way).
    strict: bool = False

    @property
    def _default_db(self) -> str:
        return self.chain.target.schema.lower()

    def _say(self, line: str, depth: int = 1) -> None:
        self.out.append("  " * depth + line)

    def _rows(self, state: str) -> int | None:
        """The state's data rows (None: no such table). Counted, not read from the snapshot
        summary: a merge-on-read state's `total-records` still counts deleted rows."""
        try:
            found = self.chain.executor.fetch(
                f"SELECT count(*) FROM {sql(table(state))} WHERE {state_table.ROW} = 0"
            )
        except Exception:  # noqa: BLE001 - no state table yet
            return None
        return int(found[0][0])

    def _state(self, title: str, maintainer: Maintainer, plan: Plan | None) -> None:
        """One state: its table's rows, its inputs' watermarks, its operators."""
        target: Target = maintainer.target
        rows = self._rows(target.state)
        size = "not built yet" if rows is None else f"{rows} state rows"
        self._say(f"{title} {target.state}: {size}")
        meta = maintainer.read_meta() if rows is not None else None
        if meta is not None:
            relations = sorted(meta.watermarks)
            heads = maintainer.session.current_heads([*relations, target.state])
            # A build's rows are recorded by the next run; until then they are these.
            committed = heads.pop(target.state).updated_ms
            runs = run_history.as_read(meta.recorded, committed, lambda: rows)
            for relation in relations:
                seen, now = meta.watermarks.get(relation), heads[relation].snapshot
                where = (
                    "current (no change waiting)"
                    if seen == now
                    else f"now {now} (changed since the last run)"
                )
                self._say(f"input {relation}: snapshot {seen} reflected, {where}", 2)
            self._say("runs (UTC, oldest first):", 2)
            for line in explain_lines.run_lines(runs):
                self._say(line, 3)
            failures = upkeep.Failures.of(maintainer.session.properties(target.state))
            if failures.count:
                self._say(
                    f"upkeep: failed {failures.count} time(s) in a row, the state is neither "
                    f"compacted nor expired until it works; last error: {failures.last_error}",
                    2,
                )
            self._next_run(maintainer, meta, heads, runs)
        if plan is None:
            self._say("planned at its first run, once the states it reads exist", 2)
            return
        for line in explain_lines.plan_lines(plan):
            self._say(line, 2)

    def _next_run(
        self,
        maintainer: Maintainer,
        meta: StateMeta,
        heads: dict[str, Head],
        runs: list[run_history.Run],
    ) -> None:
        """What the next run would do with the change waiting, and its estimates."""
        try:
            moved = {
                r: maintainer.session.table_metadata(r, h)
                for r, h in heads.items()
                if meta.base(r).metadata != h.metadata
            }
        except IvmError:
            return  # a base the refresh cannot read: it says why
        if not moved:
            return
        found = cost.changes(moved, meta.watermarks, {r: h.snapshot for r, h in heads.items()})
        if found is None:
            return
        inputs = sum(c.total for c in found) + sum(
            meta.base(r).bytes for r in heads if r not in moved
        )
        choice = cost.weigh(maintainer.policy, runs, found, inputs)
        does = "rebuild in place" if choice.rebuild else "refresh"
        self._say(f"next run: {does} (ivm_refresh={maintainer.policy}): {choice.why}", 2)

    def _planned(self, maintainer: Maintainer) -> Plan | None:
        try:
            return maintainer.plan_state(self._default_db)
        except UnsupportedQueryError:
            raise
        except IvmError:
            return None  # an input state does not exist yet

    def _walk(self, flow: dataflow.Dataflow) -> Plan | None:
        """The dataflow's states in the order a run maintains them, each planned over the
        view SELECTs of the states before it; the model's plan (None: a state it reads is
        not built yet, so it is planned at its first run)."""
        for line in flow.lines():
            self._say(line)
        chain = self.chain
        views: dict[int, str] = {}
        plan: Plan | None = None
        for index, node in enumerate(flow.states):
            compiled = node.sql(views)
            if node.role is dataflow.Role.MODEL:
                maintainer = (
                    chain.maintainer()
                    if compiled == chain.compiled_sql
                    else chain.maintainer(compiled_sql=compiled)
                )
            else:
                maintainer = chain.maintainer(
                    model=node.name, compiled_sql=compiled, target=node.target, existing="view"
                )
            plan = self._planned(maintainer)
            self._state(explain_lines.title(flow, index), maintainer, plan)
            if plan is None:
                return None
            views[index] = render.view_select(plan, node.target.state)
        return plan

    def _flat(self) -> None:
        chain = self.chain
        plan = self._walk(dataflow.flat(chain.compiled_sql, chain.target, chain.model))
        if plan is None:
            return
        found = aux_state.split(plan)
        kept = f"not kept (ivm_aux_states={chain.mode})"
        if isinstance(found, Refusal):
            self._say(f"auxiliary state: {kept}; not possible: {found}", 2)
        else:
            self._say(
                f"auxiliary state: {kept}; possible: {aux_state.describe(found, None, None)}", 2
            )

    def explain(self, given_sql: str | None) -> list[str]:
        chain = self.chain
        props = chain.properties_of(chain.target.view) or {}
        recorded = props.get(MODEL_SQL)
        user_sql = given_sql or recorded
        head = f"ivm model '{chain.model}' ({chain.target.view})"
        if not user_sql:
            raise IvmError(
                f"{head} has not been built: run `dbt run -s {chain.model}` first, or pass the "
                "SELECT to explain as `sql`."
            )
        chain.compiled_sql = user_sql
        if given_sql:
            self.out.append(f"{head}: the SELECT given")
        elif FALLBACK in props:
            self.out.append(
                f"{head}: rebuilt in full every run (ivm_unsupported='rebuild'); "
                "what maintaining it would need:"
            )
        else:
            self.out.append(f"{head}: a view over its state table")
        try:
            chain.read_views(props)
            for view, digest in sorted(chain.view_digests.items()):
                self._say(f"reads view {view} through its query (definition {digest[:12]})")
            for relation, copy in sorted(chain.copy_bases(sync=False).items()):
                self._say(
                    f"reads {relation} (no snapshots) through its copy {copy}: the next run "
                    "compares the two and captures the difference (snapshot diff)"
                )
            chain.split_top()
            if chain.top is not None and chain.top.suffix:
                self._say(f"keeps the unlimited result; its view applies{chain.top.suffix}")
            if stages.needed(chain.compiled_sql):
                self._walk(chain.staged_dataflow()[0])
            elif AUX_SQL in props and TOP_SQL in props and not given_sql:
                flow = dataflow.with_auxiliary(
                    props[AUX_SQL], props[TOP_SQL], chain.target, chain.model
                )
                self._walk(flow)
            else:
                self._flat()
        except UnsupportedQueryError as e:
            if self.strict:
                raise
            self._say(f"refused: {e.construct}" + (f": {e.fragment}" if e.fragment else ""))
            self._say(str(e))
        if int(props.get(STAGES, "0") or 0) and not given_sql:
            self._say(f"keeps {props[STAGES]} sub-query state(s)")
        return self.out


def explain(
    chain: ChainMaintainer, given_sql: str | None = None, strict: bool = False
) -> list[str]:
    """The lines `ivm_explain` prints for the model `chain` names (`strict`: a refused
    construct raises its error, as `dbt run` would, instead of being printed)."""
    return Explainer(chain, [], strict).explain(given_sql)
