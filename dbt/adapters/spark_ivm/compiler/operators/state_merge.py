"""state_merge: the delta table and the MERGE that fold a refresh's delta into its state.

Statements 2 and 4 of a refresh (`render.py` lists them all):

* the delta table: per changed group (`delta_groups_select`), its summed weight and each
  rule's delta helpers, left-joined with the stored state row for the flags the commit
  needs: is the group new, does it
  disappear, must it be recomputed. Per group g with stored count c_s and delta weight c_d:
  new count = c_s + c_d; g is inserted when unmatched and c_d > 0, deleted when c_s + c_d = 0.
  Example: a group stored with count 2 meeting a delta of weight -2 is deleted;
* the MERGE INTO the state table (keys matched null-safely with `<=>`) that applies the
  delta table and the recomputed groups and advances the metadata row's watermarks: the
  refresh's single, atomic commit.

Example: `select k, count(*) as n from t group by k`, its compacted delta rows in `c`:

>>> from dbt.adapters.spark_ivm.compiler.frontend.analyze import analyze
>>> from dbt.adapters.spark_ivm.compiler.plan import plan
>>> q = analyze("select k, count(*) as n from t group by k", "m",
...             {"db.t": [("k", "string"), ("x", "int")]}, "db")
>>> the_plan = plan(q, [("k", "string"), ("n", "bigint")], [None])
>>> text = delta_table_select(the_plan, "c", "db.m__ivm_state").sql("spark")
>>> for part in (" FROM (", " FROM `c`", " LEFT", " AND", ", NOT", ", COALESCE"):
...     text = text.replace(part, "\\n" + part.lstrip(", "))
>>> print(text)
SELECT d.*, FALSE AS `__ivm_recompute`
NOT `s`.`__ivm_count__` IS NULL AS `__ivm_matched`
COALESCE(`s`.`__ivm_count__`, 0) + `d`.`__ivm_count__` AS `__ivm_new_count`
FROM (SELECT `__ivm_k0`, SUM(`__ivm_w`) AS `__ivm_count__`
FROM `c` AS __ivm_rows GROUP BY `__ivm_k0` HAVING COUNT(*) > 0) AS d
LEFT JOIN `db`.`m__ivm_state` AS s ON `s`.`__ivm_row__` = 0
AND `s`.`__ivm_k0` IS NOT DISTINCT FROM `d`.`__ivm_k0`
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.operators.aggregates import COUNT, RECOMPUTE_FLAG, RECOMPUTED
from dbt.adapters.spark_ivm.compiler.operators.delta import WEIGHT, TermRenderer
from dbt.adapters.spark_ivm.compiler.operators.prepare import (
    MetaRow,
    MetaWrite,
    Names,
    Prepared,
    Run,
)
from dbt.adapters.spark_ivm.compiler.plan import Plan
from dbt.adapters.spark_ivm.compiler.render import (
    MATCHED,
    NEW_COUNT,
    recompute_reads,
    recompute_select,
    typed,
)
from dbt.adapters.spark_ivm.compiler.sql.merge import When, merge_into
from dbt.adapters.spark_ivm.compiler.sql.state_table import META, ROW, meta_unchanged
from dbt.adapters.spark_ivm.compiler.sql.templates import (
    col,
    null_safe_match,
    sql,
    table,
    template,
    text,
)


def delta_groups_select(plan: Plan, compacted: exp.Select | str) -> exp.Select:
    """The changed groups: per key of the compacted delta, its summed weight (COUNT) and
    each rule's delta helpers; the `d` side of the delta table.

    `compacted` is the compacted delta's SELECT, or a scratch view holding it."""
    w = col(WEIGHT)
    source = table(compacted) if isinstance(compacted, str) else exp.Subquery(this=compacted)
    keys = [col(n) for n in plan.key_columns]
    per_row = {n: v for rule in plan.rules for n, v in rule.row_values(keys).items()}
    if per_row:
        rows = exp.Select().select(exp.Star()).from_(exp.alias_(source, "__ivm_rows0", table=True))
        rows = rows.select(*(exp.alias_(v, n, quoted=True) for n, v in per_row.items()))
        source = exp.Subquery(this=rows)
    agg = exp.Select().from_(exp.alias_(source, "__ivm_rows", table=True))
    for name in plan.key_columns:
        agg = agg.select(col(name))
    agg = agg.select(exp.alias_(template("SUM(:w)", w=w), COUNT, quoted=True))
    for rule in plan.rules:
        for name, node in rule.delta(w).items():
            agg = agg.select(exp.alias_(node, name, quoted=True))
    if plan.key_columns:
        agg = agg.group_by(*(col(n) for n in plan.key_columns))
    return agg.having(template("COUNT(*) > 0"))


def delta_table_select(plan: Plan, compacted: exp.Select | str, state: str) -> exp.Select:
    """Per key: the summed weight, each rule's delta helpers, and the stored row's flags:
    the changed groups (`delta_groups_select`) left-joined with the state table.

    `compacted` is the compacted delta's SELECT, or a scratch view holding it."""
    w = col(WEIGHT)
    groups = exp.Subquery(this=delta_groups_select(plan, compacted))
    flags = [f for r in plan.rules if (f := r.needs_recompute("s", "d")) is not None]
    flag = exp.or_(*flags) if flags else exp.false()
    match = exp.and_(
        template(":r = 0", r=col(ROW, "s")),
        null_safe_match(
            [col(k, "s") for k in plan.key_columns], [col(k, "d") for k in plan.key_columns]
        ),
    )
    select = (
        exp.Select()
        .select(exp.Column(this=exp.Star(), table=exp.to_identifier("d")))
        .select(exp.alias_(flag, RECOMPUTE_FLAG, quoted=True))
        .select(exp.alias_(template(":c IS NOT NULL", c=col(COUNT, "s")), MATCHED, quoted=True))
        .select(
            exp.alias_(
                template("COALESCE(:s, 0) + :d", s=col(COUNT, "s"), d=col(COUNT, "d")),
                NEW_COUNT,
                quoted=True,
            )
        )
    )
    outputs: list[exp.Expression] = []  # the delta table's columns from the joined level
    derived_any = False
    for rule in plan.rules:
        joined = rule.joined("s", "d")
        for name, node in joined.items():
            select = select.select(exp.alias_(node, name, quoted=True))
        derived = rule.late("j")
        derived_any = derived_any or bool(derived)
        if derived:
            outputs += [exp.alias_(node, name, quoted=True) for name, node in derived.items()]
        else:
            outputs += [col(name, "j") for name in joined]
    select = select.from_(exp.alias_(groups, "d", table=True)).join(
        exp.alias_(table(state), "s", table=True), on=match, join_type="left"
    )
    late = [f for r in plan.rules if (f := r.joined_flag("j")) is not None]
    if not late and not derived_any:
        return select
    # flags over the folded values read them by name, one level up, so that their SQL is
    # not repeated at every use
    delta_columns = [*plan.key_columns, COUNT, *(n for r in plan.rules for n in r.delta(w))]
    outer = exp.Select().select(*(col(c, "j") for c in delta_columns))
    outer = outer.select(
        exp.alias_(exp.or_(col(RECOMPUTE_FLAG, "j"), *late), RECOMPUTE_FLAG, quoted=True)
    )
    outer = outer.select(*(col(c, "j") for c in [MATCHED, NEW_COUNT]), *outputs)
    return outer.from_(exp.alias_(exp.Subquery(this=select), "j", table=True))


def recomputed_columns(plan: Plan) -> list[str]:
    return [RECOMPUTED + n for rule in plan.rules for n in rule.recomputed_names()]


def merge_sql(
    plan: Plan,
    state: str,
    delta: str,
    recomputed: str | None,
    meta: MetaWrite,
    types: Mapping[str, str],
    scope: exp.Expression | None = None,
) -> str:
    """The refresh's single commit: fold the delta into the state (keys matched with `<=>`),
    set recomputed groups, and advance the metadata row's watermarks, in one MERGE; `scope`:
    a condition every state row a delta row matches meets (`runtime/merge_scope.py`), which
    the state's scan then reads by.

    >>> from dbt.adapters.spark_ivm.compiler.frontend.analyze import analyze
    >>> from dbt.adapters.spark_ivm.compiler.plan import plan
    >>> q = analyze("select k, count(*) as n from t group by k", "m",
    ...             {"db.t": [("k", "int"), ("x", "int")]}, "db")
    >>> the_plan = plan(q, [("k", "int"), ("n", "bigint")], [None])
    >>> statement = merge_sql(the_plan, "db.m__ivm_state", "d0", None, MetaWrite(None, "{}"),
    ...                       {}, template("s.__ivm_k0 IN (4, 7)"))
    >>> print(statement[statement.index(" ON "):statement.index(" WHEN")])
     ON (`s`.`__ivm_row__` = `d`.`__ivm_row__` AND `s`.`__ivm_k0` IS NOT DISTINCT FROM \
`d`.`__ivm_k0`) AND (`s`.`__ivm_row__` = 1 OR s.__ivm_k0 IN (4, 7))
    """
    keys = plan.key_columns
    rc_cols = recomputed_columns(plan)
    source = (
        exp.Select()
        .select(
            exp.alias_(exp.Literal.number(0), ROW, quoted=True),
            exp.alias_(exp.cast(exp.null(), exp.DataType.build("string")), META, quoted=True),
            exp.Column(this=exp.Star(), table=exp.to_identifier("d")),
        )
        .from_(exp.alias_(table(delta), "d", table=True))
    )
    if recomputed is not None and rc_cols and keys:
        source = source.select(*(col(c, "r") for c in rc_cols)).join(
            exp.alias_(table(recomputed), "r", table=True),
            on=null_safe_match([col(k, "d") for k in keys], [col(k, "r") for k in keys]),
            join_type="left",
        )
    elif recomputed is not None and rc_cols:
        # An ungrouped state's recompute is its one row: read by scalar sub-queries (which
        # Spark merges into one), since a join ON TRUE is planned as a nested loop join.
        one_row = table(recomputed)
        source = source.select(
            *(
                exp.alias_(
                    exp.Subquery(this=exp.select(col(c)).from_(one_row.copy())), c, quoted=True
                )
                for c in rc_cols
            )
        )
    else:
        source = source.select(*(exp.alias_(exp.null(), c, quoted=True) for c in rc_cols))
    delta_columns = [*keys, COUNT, *(n for r in plan.rules for n in r.delta_table_columns())]
    delta_columns += [RECOMPUTE_FLAG, MATCHED, NEW_COUNT]
    meta_row = exp.Select().select(
        exp.alias_(exp.Literal.number(1), ROW, quoted=True),
        exp.alias_(text(meta.written), META, quoted=True),
        *(exp.alias_(exp.null(), c, quoted=True) for c in [*delta_columns, *rc_cols]),
    )
    using = exp.union(source, meta_row, distinct=False)

    updates: dict[str, exp.Expression] = {
        COUNT: template(":s + :d", s=col(COUNT, "s"), d=col(COUNT, "d"))
    }
    inserts: dict[str, exp.Expression] = {ROW: exp.Literal.number(0)}
    inserts.update({k: col(k, "d") for k in keys})
    inserts[COUNT] = col(COUNT, "d")
    for rule in plan.rules:
        updates.update(rule.merged("s", "d"))
        inserts.update(rule.inserted("d"))
    set_list = ", ".join(f"{sql(col(c))} = {sql(typed(v, c, types))}" for c, v in updates.items())
    match = exp.and_(
        template(":a = :b", a=col(ROW, "s"), b=col(ROW, "d")),
        null_safe_match([col(k, "s") for k in keys], [col(k, "d") for k in keys]),
    )
    if scope is not None:
        meta_row = template(":r = 1", r=col(ROW, "s"))
        match = exp.and_(match, exp.paren(exp.or_(meta_row, scope)))
    whens = [When.matched(f"UPDATE SET {META} = d.{META}", f"d.{ROW} = 1")]
    if plan.grouped:
        whens.append(When.matched("DELETE", f"d.{NEW_COUNT} = 0"))
    whens.append(When.matched(f"UPDATE SET {set_list}"))
    if plan.grouped:
        cols = ", ".join(sql(col(c)) for c in inserts)
        values = ", ".join(sql(typed(v, c, types)) for c, v in inserts.items())
        whens.append(
            When.not_matched(f"INSERT ({cols}) VALUES ({values})", f"d.{ROW} = 0 AND d.{COUNT} > 0")
        )
    return merge_into(state, using, match, whens, meta_unchanged(state, meta.read))


#: Counts of state rows inserted, updated, deleted and groups recomputed by a refresh, over
#: its delta table's rows (`delta_table_select`).
STATS = (
    f"count_if(NOT {MATCHED} AND {NEW_COUNT} > 0)",
    f"count_if({MATCHED} AND {NEW_COUNT} <> 0)",
    f"count_if({MATCHED} AND {NEW_COUNT} = 0)",
    f"count_if({RECOMPUTE_FLAG} AND {NEW_COUNT} > 0)",
)


def prepare(
    run: Run,
    names: Names,
    plan: Plan,
    renderer: TermRenderer,
    compacted: exp.Select,
    new_meta: MetaRow,
) -> Prepared:
    """The delta table, the recomputed groups and the MERGE that folds them in."""
    select = delta_table_select(plan, compacted, names.state)
    stats = run.compute_measured("delta", names.delta, select, STATS)
    keys = (names.delta, list(plan.key_columns))
    inserted, updated, deleted, recomputed = (int(x or 0) for x in stats)
    run.checkpoint("delta")
    if not (inserted or updated or deleted):
        return Prepared(None, keys, recomputed=recomputed)
    recomputed_table = None
    if recomputed:
        run.may_recompute(recomputed, recompute_reads(plan))
        recomputed_table = names.recomputed
        select = recompute_select(plan, renderer, names.delta)
        run.compute_scratch("recompute", recomputed_table, select)
    run.checkpoint("recompute")
    types = run.state_types()
    changed = inserted + updated + deleted
    scope = (
        run.merge_scope(names.delta, plan.key_columns, "s", changed) if plan.key_columns else None
    )
    commit = merge_sql(
        plan,
        names.state,
        names.delta,
        recomputed_table,
        new_meta(inserted, updated, deleted),
        types,
        scope,
    )
    return Prepared(commit, keys, inserted, updated, deleted, recomputed)
