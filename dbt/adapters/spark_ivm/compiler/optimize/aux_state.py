"""Auxiliary join states: a dimension change joins a pre-aggregated state, not the facts.

What it maintains (docs/architecture.md, §4; F-IVM's view trees, DBToaster's higher-order
views). For an aggregate (or a SELECT DISTINCT, below) over inner joins whose last input D is
a small table, the other inputs (the facts) are joined and pre-aggregated down to their side
of D's join keys and the fact columns the rest of the query groups by, as an ivm state A of
its own; the model becomes the same aggregate over A JOIN D:

    Agg_g( F_1 ⋈ … ⋈ F_m ⋈_(j = d) D )  =  Agg'_g( A ⋈_(A.j = d) D ),
    A = Agg_(j, g_F)( F_1 ⋈ … ⋈ F_m )       j: the facts' side of D's join equalities,
                                            g_F: the group keys over the facts only,

where Agg' combines A's partial aggregates: count(*) -> sum(A.count), count(x) ->
sum(A.count_x), sum(x) -> sum(A.sum_x) cast to the original result type, min(x)/max(x) ->
min/max(A.min/max_x). A change of D is then joined with A (one row per join key and fact
group) instead of with the facts, and a change of the facts maintains A and reaches the model
as A's change (`chain.py` runs the two states in order).

Example: revenue per (customer nation, order status) over lineitem ⋈ orders ⋈ customers:
    A   = select o.o_custkey as aux_j0, o.o_orderstatus as aux_g0,
                 count(*) as aux_x0, sum(l.price) as aux_x1
          from lineitem l join orders o on l.l_orderkey = o.o_orderkey
          group by o.o_custkey, o.o_orderstatus
    top = select c.c_nationkey, a.aux_g0 as o_orderstatus, sum(a.aux_x0) as line_count,
                 cast(sum(a.aux_x1) as decimal(25,2)) as revenue
          from A a join customers c on a.aux_j0 = c.c_custkey
          group by c.c_nationkey, a.aux_g0

An outer join keeps its preserved side as D: for `D LEFT JOIN F ON d = F.j` the model
becomes `Agg''_g( D LEFT JOIN A ON d = A.j )` with A as above over F (F's own ON conditions
filter F before it is grouped, as they filter it before the join), and a D row without
facts, one padded row in the model, meets no row of A either. Its partial aggregates combine
as the padded row counts: count(*) -> sum(coalesce(A.count, 1)), count(x) ->
coalesce(sum(A.count_x), 0), sum, min and max as above (NULL over the padded row). A WHERE
condition on F would reject the padded rows, which the front end already turned into an
inner join; a remaining one is refused. Example, orders per customer:
    A   = select o.o_custkey as aux_j0, count(o.o_orderkey) as aux_x0
          from orders o group by o.o_custkey
    top = select c.c_custkey, coalesce(sum(a.aux_x0), 0) as order_count
          from customers c left join A a on a.aux_j0 = c.c_custkey
          group by c.c_custkey

A SELECT DISTINCT is the aggregate that groups by its result columns and computes nothing:
A groups the facts by j and the result columns over the facts (g_F), and the model is the
same DISTINCT over A JOIN D (or D LEFT JOIN A), since a fact row's (j, g_F) is in A exactly
when some fact row has it:

    Distinct_g( F ⋈_(j = d) D )  =  Distinct_g'( A ⋈_(A.j = d) D ),   A = Agg_(j, g_F)( F )

Example, the segments and priorities ordered per nation (the benchmark's nation_segments):
    A   = select c.c_nationkey as aux_j0, c.c_mktsegment as aux_g0,
                 o.o_orderpriority as aux_g1
          from orders o join customers c on o.o_custkey = c.c_custkey
          group by c.c_nationkey, c.c_mktsegment, o.o_orderpriority
    top = select distinct n.n_name, a.aux_g0 as c_mktsegment, a.aux_g1 as o_orderpriority
          from A a join nations n on a.aux_j0 = n.n_nationkey

Only exact rewrites are made: sums of integral types (Spark's wrap-around is associative) and
of decimals whose result type is not capped at 38 digits (a partial sum cannot overflow where
the whole one does not); no avg, count(DISTINCT x) or non-decomposable aggregate, no outer
join but one LEFT join of two inputs, no condition mixing D and the facts other than an
equality. Anything else keeps the flat plan.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.errors import Refusal
from dbt.adapters.spark_ivm.compiler.ir import AggKind, JoinKind
from dbt.adapters.spark_ivm.compiler.operators.aggregates.rule import decimal_type
from dbt.adapters.spark_ivm.compiler.plan import Plan
from dbt.adapters.spark_ivm.compiler.sql.templates import aliases, col, conj, conjuncts, sql, table

#: Alias of the auxiliary state in the model's rewritten query.
AUX_ALIAS = "__ivm_aux"
#: The table that stands for A in the model's rewritten query until A's SELECT is known.
_PLACEHOLDER = "__ivm_aux_placeholder"
_INTEGRAL = {"tinyint", "smallint", "int", "bigint", "byte", "short", "integer", "long"}
#: How a partial aggregate of A combines into the model's aggregate.
_COMBINE = {
    AggKind.COUNT_STAR: "sum",
    AggKind.COUNT: "sum",
    AggKind.SUM: "sum",
    AggKind.MIN: "min",
    AggKind.MAX: "max",
}


@dataclass(frozen=True)
class AuxSplit:
    """A model split into its auxiliary state A and the model's query over A and D."""

    aux_sql: str  # A's SELECT over the facts
    dimension: str  # D's relation
    facts: tuple[str, ...]  # the facts' relations
    join_keys: tuple[str, ...]  # the facts' side of D's join equalities, as written
    group_keys: tuple[str, ...]  # the group keys over the facts only, as written
    top: exp.Select  # the model over A JOIN D, A a placeholder table

    def top_sql(self, aux_from: str) -> str:
        """The model's query with A read from `aux_from` (a SELECT of A's columns)."""
        node = self.top.copy()
        placeholder = next(t for t in node.find_all(exp.Table) if t.name == _PLACEHOLDER)
        placeholder.replace(
            exp.alias_(exp.Subquery(this=exp.maybe_parse(aux_from, dialect="spark")), AUX_ALIAS)
        )
        return sql(node)


def exact_sum_type(arg_type: str | None) -> str | None:
    """Spark's result type of sum(x) when summing partial sums gives it exactly (see the
    module docstring), else None. `bigint` for integral x; decimal(p + 10, s) for
    decimal(p, s) while p + 10 <= 38 (not capped).

    >>> exact_sum_type("int"), exact_sum_type("decimal(10,2)"), exact_sum_type("decimal(30,2)")
    ('bigint', 'decimal(20,2)', None)
    >>> exact_sum_type("double")  # partial sums of doubles round differently
    """
    if arg_type is None:
        return None
    base = arg_type.lower().strip()
    if base in _INTEGRAL:
        return "bigint"
    dec = decimal_type(base)
    if dec is None or dec[0] + 10 > 38:
        return None
    return f"decimal({dec[0] + 10},{dec[1]})"


def split(plan: Plan) -> AuxSplit | Refusal:
    """The auxiliary split of a planned model, or the reason there is none."""
    query = plan.query
    results = [o.unalias() for o in query.outputs]
    if query.distinct:
        # SELECT DISTINCT: the result columns are the group keys of an aggregate without
        # aggregates (see the module).
        group_by = results
    elif query.is_aggregate:
        group_by = query.group_by
    else:
        return Refusal("not an aggregate or a DISTINCT")
    kinds = {s.kind for s in query.steps}
    outer = len(query.inputs) == 2 and kinds == {JoinKind.LEFT}
    if len(query.inputs) < 2 or not (outer or kinds == {JoinKind.INNER}):
        return Refusal("not an aggregate or a DISTINCT over inner joins or one LEFT join")
    if query.weights:
        # its SQL would read the state table, not the repeated rows of its view
        return Refusal("an input is a state of repeated rows")
    # D: the last input of inner joins, the preserved side of a LEFT join
    dim = query.inputs[0] if outer else query.inputs[-1]
    facts = query.inputs[1:] if outer else query.inputs[:-1]
    fact_aliases = {f.alias for f in facts}
    if dim.relation in {f.relation for f in facts}:
        return Refusal(f"{dim.relation} is also a fact input")

    fact_where: list[exp.Expression] = []
    dim_where: list[exp.Expression] = []
    dim_on: list[exp.Expression] = []  # a LEFT join's conditions on D alone stay in its ON
    fact_keys: list[exp.Expression] = []
    dim_keys: list[exp.Expression] = []
    on = conjuncts(query.steps[-1].on)
    for conjunct in [*on, *conjuncts(query.where)]:
        if isinstance(conjunct, exp.Boolean) and conjunct.this is True:
            continue
        used = aliases(conjunct)
        in_on = any(conjunct is c for c in on)
        if conjunct.find(exp.Subquery, exp.Exists):
            return Refusal("a sub-query in a condition")
        if outer and not in_on and used & fact_aliases:
            return Refusal(f"a WHERE condition on the padded side: {sql(conjunct)}")
        if used <= fact_aliases and used:
            fact_where.append(conjunct)
        elif used <= {dim.alias}:
            (dim_on if outer and in_on else dim_where).append(conjunct)
        elif isinstance(conjunct, exp.EQ):
            a, b = conjunct.this, conjunct.expression
            sa, sb = aliases(a), aliases(b)
            if sa and sb and sa <= fact_aliases and sb == {dim.alias}:
                fact_keys.append(a)
                dim_keys.append(b)
            elif sa and sb and sb <= fact_aliases and sa == {dim.alias}:
                fact_keys.append(b)
                dim_keys.append(a)
            else:
                return Refusal(f"a join condition mixing both sides: {sql(conjunct)}")
        else:
            return Refusal(f"a condition mixing {dim.alias} and the facts: {sql(conjunct)}")
    if not fact_keys:
        return Refusal(f"no equality joins {dim.alias} to the facts")

    group_cols: list[exp.Expression] = []  # A's fact-side group keys
    key_map: dict[exp.Expression, exp.Expression] = {}
    for key in group_by:
        used = aliases(key)
        if used and used <= fact_aliases:
            if key not in key_map:
                key_map[key] = col(f"aux_g{len(group_cols)}", AUX_ALIAS)
                group_cols.append(key)
        elif used and not used <= {dim.alias}:
            what = "a result column of the DISTINCT" if query.distinct else "a group key"
            return Refusal(f"{what} mixing both sides: {sql(key)}")

    partials: list[exp.Expression] = []
    call_map: dict[exp.Expression, exp.Expression] = {}
    for i, agg in enumerate(query.aggregates):
        combine = _COMBINE.get(agg.kind)
        if combine is None or agg.call.find(exp.Distinct):
            return Refusal(f"the aggregate {sql(agg.call)} has no partial form")
        if agg.arg is not None and not (aliases(agg.arg) and aliases(agg.arg) <= fact_aliases):
            return Refusal(f"the aggregate {sql(agg.call)} reads {dim.alias}")
        sum_type = exact_sum_type(plan.arg_types[i]) if agg.kind is AggKind.SUM else None
        if agg.kind is AggKind.SUM and sum_type is None:
            return Refusal(f"the sum {sql(agg.call)} of {plan.arg_types[i]} is not exact in parts")
        name = f"aux_x{len(partials)}"
        partials.append(exp.alias_(agg.call.copy(), name))
        partial: exp.Expression = col(name, AUX_ALIAS)
        if outer and agg.kind is AggKind.COUNT_STAR:
            # the padded row of a D row without facts counts as one row
            partial = exp.func("coalesce", partial, exp.Literal.number(1))
        combined: exp.Expression = exp.func(combine, partial)
        if sum_type is not None:
            combined = exp.cast(combined, exp.DataType.build(sum_type, dialect="spark"))
        counts = agg.kind in (AggKind.COUNT_STAR, AggKind.COUNT)
        if (counts and not query.group_by) or (outer and agg.kind is AggKind.COUNT):
            # A count over no rows (ungrouped) or over padded rows alone (count(x) of a LEFT
            # join) is 0; the sum of no partial counts is NULL.
            combined = exp.func("coalesce", combined, exp.Literal.number(0))
        call_map[agg.call] = combined

    # A: the facts joined as in the model, grouped by the join keys and fact group keys.
    aux = exp.Select().from_(
        exp.alias_(table(facts[0].relation), facts[0].alias, table=True, quoted=True)
    )
    for step in query.steps[:-1]:
        inp = query.inputs[step.index]
        aux = aux.join(
            exp.alias_(table(inp.relation), inp.alias, table=True, quoted=True),
            on=step.on.copy(),
            join_type="inner",
        )
    keys_out = [exp.alias_(k.copy(), f"aux_j{i}") for i, k in enumerate(fact_keys)]
    groups_out = [exp.alias_(g.copy(), f"aux_g{i}") for i, g in enumerate(group_cols)]
    aux = aux.select(*keys_out, *groups_out, *partials)
    where = conj([c.copy() for c in fact_where])
    if where is not None:
        aux = aux.where(where)
    aux = aux.group_by(*(k.copy() for k in fact_keys), *(g.copy() for g in group_cols))

    # The model over A JOIN D, every output named as Spark names the model's.
    def rewrite(node: exp.Expression) -> exp.Expression:
        def sub(n: exp.Expression) -> exp.Expression:
            for mapping in (call_map, key_map):
                found = mapping.get(n)
                if found is not None:
                    return found.copy()
            return n

        return node.copy().transform(sub, copy=True)

    outputs = [
        exp.alias_(rewrite(o), name, quoted=True) for o, name in zip(results, plan.output_names)
    ]
    top_on = conj(
        [
            exp.EQ(this=col(f"aux_j{i}", AUX_ALIAS), expression=d.copy())
            for i, d in enumerate(dim_keys)
        ]
        + [c.copy() for c in dim_on]
    )
    dim_table = exp.alias_(table(dim.relation), dim.alias, table=True, quoted=True)
    if outer:
        top = exp.Select().select(*outputs).from_(dim_table)
        top = top.join(table(_PLACEHOLDER), on=top_on, join_type="left")
    else:
        top = exp.Select().select(*outputs).from_(table(_PLACEHOLDER))
        top = top.join(dim_table, on=top_on, join_type="inner")
    top_where = conj([c.copy() for c in dim_where])
    if top_where is not None:
        top = top.where(top_where)
    if query.distinct:
        top = top.distinct()
    elif query.group_by:
        top = top.group_by(*(rewrite(k) for k in query.group_by))
    if query.having is not None:
        top = top.having(rewrite(query.having))
    stray = [
        c
        for node in [*top.expressions, top.args.get("having")]
        if node is not None
        for c in node.find_all(exp.Column)
        if c.table in fact_aliases
    ]
    if stray:
        return Refusal(f"a fact column outside the group keys and aggregates: {sql(stray[0])}")
    return AuxSplit(
        aux_sql=sql(aux),
        dimension=dim.relation,
        facts=tuple(dict.fromkeys(f.relation for f in facts)),
        join_keys=tuple(sql(k) for k in fact_keys),
        group_keys=tuple(sql(g) for g in group_cols),
        top=top,
    )


def describe(the_split: AuxSplit, dim_rows: int | None, fact_rows: int | None) -> str:
    """The log line's words for the choice, e.g.
    `aux state A(o.o_custkey, o.o_orderstatus) over s.lineitem x s.orders (6000000 rows)
    for s.customers (150000 rows)`."""

    def rows(n: int | None) -> str:
        return "" if n is None else f" ({n} rows)"

    return (
        f"aux state A({', '.join((*the_split.join_keys, *the_split.group_keys))}) over "
        f"{' x '.join(the_split.facts)}"
        f"{rows(fact_rows)} for {the_split.dimension}{rows(dim_rows)}"
    )


def choose(dim_rows: int | None, fact_rows: int | None, ratio: int = 10) -> bool:
    """Is an auxiliary state worth it? When the facts hold at least `ratio` times the
    dimension's rows: A has at most one row per fact row, and usually about one per
    dimension row and fact group, so a dimension change then reads far less than the facts.
    Unknown sizes: no."""
    if dim_rows is None or fact_rows is None:
        return False
    return fact_rows >= ratio * max(dim_rows, 1)
