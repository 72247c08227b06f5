"""extremes: min(x) and max(x), kept as a short ranked list of values with counts.

State per group: `top` = the k first distinct non-NULL values of x in rank order (ascending
for min, descending for max), each with its exact count in the group, and `full` = the list
holds every distinct value of the group. The visible value is the list's first value.

Invariant: `top` is a prefix of the group's distinct values in rank order, with exact
counts, except that the last value's count may be unknown (NULL: at least one); when not
`full`, every value of the group outside the list ranks after its last.

Build. The state is built by the query's own aggregate: each group's list is its extreme
with an unknown count, `[(min(x), NULL)]`, not full (empty and full where x is all NULL). So
the build reads its input once, as the query does; counting values would read it again (the
lists of the SF 1 benchmark's two MIN/MAX models made their builds 2.1-3.1x their tables').
A list is made exact where its group is recomputed.

Delta rule. The delta of a group is pre-aggregated per value (net weight) and cut to its k
first values (`cut` when more existed). Folding it in:

    counts(v) = top(v) + delta(v)               for v in top or delta
                (unknown where top(v) is; 0, so dropped, where the delta deletes v)
    bound     = the last value of top  (if not full)
                and the last value of the delta (if cut)
    top'      = first k of {(v, counts(v)) : counts(v) > 0, v ranks no later than bound}
    full'     = full AND NOT cut AND the kept values number at most k

A value ranking after a bound is dropped: whether the group holds other values before it is
not known. Only when `top'` is empty and not `full'` is the group recomputed from the base
tables (only that group, its k first values). Deleting the extreme of a group with other
values listed needs no base-table read (the PostgreSQL IVM rule recomputes every time).

Example (min, k = 2): stored [(3, 1), (5, 2)], not full; delete one 3, insert 4 ->
counts {3: 0, 4: 1, 5: 2}; bound 5; top' = [(4, 1), (5, 2)], visible 4, no recompute.
Delete both 5s as well -> top' = [(4, 1)]; delete the 4 too -> top' empty -> recompute.
Built [(3, NULL)]: insert 2 and 3 -> [(2, 1), (3, NULL)]; delete one 3 -> [(2, 1)] (how many
3s are left is not known, and every value not listed ranks after 2).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.environment import number_from_env
from dbt.adapters.spark_ivm.compiler.ir import AggKind
from dbt.adapters.spark_ivm.compiler.operators.aggregates.rule import (
    RECOMPUTE_FLAG,
    RECOMPUTED,
    AggregateRule,
)
from dbt.adapters.spark_ivm.compiler.sql.templates import col, null_safe_match, template

KEEP = 16  # values kept per group and MIN/MAX call
KEEP_ENV = "DBT_SPARK_IVM_MIN_MAX_KEEP"
#: Rows of the sample a group's bound is read from (`first_values`).
SAMPLE_ROWS = 65536
SAMPLE_ENV = "DBT_SPARK_IVM_MIN_MAX_SAMPLE"
VALUE = "__ivm_v"  # the ranked value and its count in the per-value selects
WEIGHT_SUM = "__ivm_n"
RANK = "__ivm_rank"


def keep_from_env() -> int:
    """How many values a MIN/MAX state keeps per group (`DBT_SPARK_IVM_MIN_MAX_KEEP`, default
    16). Any value is safe to change between runs: lists of any length merge correctly."""
    return number_from_env(KEEP_ENV, KEEP, 1, "values")


def sample_from_env() -> int:
    """Rows of the sample a list's bound is read from when a list is computed from the base
    tables (`DBT_SPARK_IVM_MIN_MAX_SAMPLE`, default `SAMPLE_ROWS`; `first_values`). Any
    value gives the same lists; the tests make it small so that the bound cuts."""
    return number_from_env(SAMPLE_ENV, SAMPLE_ROWS, 1, "rows")


@dataclass
class ExtremeRule(AggregateRule):
    """min(x) / max(x) as a ranked list of the group's first values (see the module)."""

    keep: int = KEEP

    @property
    def _is_min(self) -> bool:
        return self.agg.kind is AggKind.MIN

    @property
    def top(self) -> str:
        return self.name("top")

    @property
    def full(self) -> str:
        return self.name("full")

    def _value_type(self) -> str:
        # A NULL literal argument has type void, which no column can hold: it lists nothing.
        return self.arg_type if self.arg_type and self.arg_type != "void" else "string"

    def list_type(self) -> exp.DataType:
        return exp.DataType.build(
            f"array<struct<v: {self._value_type()}, n: bigint>>", dialect="spark"
        )

    def empty(self) -> exp.Expression:
        return exp.cast(template("ARRAY()"), self.list_type())

    def state_columns(self) -> list[str]:
        return [self.top, self.full]

    def initial(self) -> dict[str, exp.Expression]:
        """The group's extreme with an unknown count, in the query's own aggregate (see the
        module: built lists are made exact by a recompute).

        >>> from dbt.adapters.spark_ivm.compiler.ir import Aggregate
        >>> from dbt.adapters.spark_ivm.compiler.sql.templates import sql
        >>> x = exp.column("x")
        >>> rule = ExtremeRule(0, Aggregate(AggKind.MIN, exp.Min(this=x), x), "int")
        >>> sorted((k, sql(v)) for k, v in rule.initial().items())  # doctest: +NORMALIZE_WHITESPACE
        [('__ivm_full_0', 'MIN(x) IS NULL'),
         ('__ivm_top_0', 'CASE WHEN MIN(x) IS NULL THEN CAST(ARRAY() AS ARRAY<STRUCT<v: INT, n: BIGINT>>)
          ELSE CAST(ARRAY(STRUCT(MIN(x) AS v, CAST(NULL AS BIGINT) AS n)) AS ARRAY<STRUCT<v: INT, n: BIGINT>>) END')]
        """
        value = exp.Min(this=self.arg()) if self._is_min else exp.Max(this=self.arg())
        listed = exp.cast(
            template("ARRAY(STRUCT(:x AS v, CAST(NULL AS BIGINT) AS n))", x=value),
            self.list_type(),
        )
        top = template(
            "CASE WHEN :x IS NULL THEN :empty ELSE :l END",
            x=value.copy(), empty=self.empty(), l=listed,
        )  # fmt: skip
        return {self.top: top, self.full: exp.Is(this=value.copy(), expression=exp.null())}

    def delta(self, w: exp.Expression) -> dict[str, exp.Expression]:
        """The delta's first `keep` + 1 values with net weights (a `keep` + 1-th: the delta
        is cut), in the same aggregate as the group's other helpers (no shuffle of its own):
        the group's (x, w) rows sorted in rank order, then one pass that sums runs of equal
        values, drops zero sums, and stops listing after `keep` + 1 values (so O(rows *
        keep))."""
        item = template(
            "CASE WHEN :x IS NOT NULL THEN STRUCT(:x AS v, CAST(:w AS BIGINT) AS n) END",
            x=col(self.arg_column), w=w,
        )  # fmt: skip
        rows = template("ARRAY_SORT(COLLECT_LIST(:i))", i=item)
        if not self._is_min:
            rows = exp.func("REVERSE", rows)
        value = exp.DataType.build(self._value_type(), dialect="spark")
        room = f"__ivm_acc.started AND __ivm_acc.cn <> 0 AND SIZE(__ivm_acc.l) <= {self.keep}"
        flushed = (
            f"IF({room}, CONCAT(__ivm_acc.l, ARRAY(STRUCT(__ivm_acc.cv AS v, __ivm_acc.cn AS n))),"
            " __ivm_acc.l)"
        )
        listed = template(
            "AGGREGATE(:rows, STRUCT(:empty AS l, :nothing AS cv, CAST(0 AS BIGINT) AS cn, "
            "FALSE AS started), (__ivm_acc, __ivm_e) -> IF(__ivm_acc.started AND "
            "__ivm_acc.cv <=> __ivm_e.v, STRUCT(__ivm_acc.l AS l, __ivm_acc.cv AS cv, "
            "__ivm_acc.cn + __ivm_e.n AS cn, TRUE AS started), "
            f"STRUCT({flushed} AS l, __ivm_e.v AS cv, __ivm_e.n AS cn, TRUE AS started)), "
            f"__ivm_acc -> {flushed})",
            rows=rows, empty=self.empty(), nothing=exp.cast(exp.null(), value),
        )  # fmt: skip
        # `joined` reads both the list (its first `keep`) and the cut (its size) from this one
        # column, so that the AGGREGATE is written, and analysed by Spark, once.
        return {self.name("dlist"): listed}

    def recomputed_names(self) -> list[str]:
        return [self.top, self.full]

    def delta_table_columns(self) -> list[str]:
        return [self.name("dlist"), self.name("mtop"), self.name("mfull")]

    # -- per-value lists ----------------------------------------------------------------
    def first_values(self, rows: exp.Select, key_columns: list[str]) -> exp.Select:
        """Per key, the first `keep` + 1 distinct values of `rows` in rank order, each with
        its count (`first_values`): what `ranked_select` lists."""
        return first_values(
            rows, key_columns, self.keep + 1, ascending=self._is_min, sample_rows=sample_from_env()
        )

    def ranked_select(self, values: exp.Select, key_columns: list[str], prefix: str) -> exp.Select:
        """Per key: the first `keep` values of `values` (rows: keys, VALUE, WEIGHT_SUM with one
        row per distinct value) in rank order, and whether more existed. Columns:
        `<prefix>top`, `<prefix>cut` (TRUE when values were left out)."""
        order = exp.Ordered(this=col(VALUE), desc=not self._is_min, nulls_first=self._is_min)
        window = exp.Window(
            this=exp.RowNumber(),
            partition_by=[col(k) for k in key_columns],
            order=exp.Order(expressions=[order]),
        )
        ranked = (
            exp.Select()
            .select(*(col(k) for k in key_columns), col(VALUE), col(WEIGHT_SUM))
            .select(exp.alias_(window, RANK, quoted=True))
            .from_(exp.alias_(exp.Subquery(this=values), "__ivm_values", table=True))
        )
        item = template("STRUCT(:v AS v, CAST(:n AS BIGINT) AS n)", v=col(VALUE), n=col(WEIGHT_SUM))
        listed = template("ARRAY_SORT(COLLECT_LIST(:i))", i=item)
        if not self._is_min:
            listed = exp.func("REVERSE", listed)
        select = (
            exp.Select()
            .select(*(col(k) for k in key_columns))
            .select(
                exp.alias_(
                    template(f"SLICE(:l, 1, {self.keep})", l=listed), f"{prefix}top", quoted=True
                )
            )
            .select(exp.alias_(template(f"COUNT(*) > {self.keep}"), f"{prefix}cut", quoted=True))
            .from_(exp.alias_(exp.Subquery(this=ranked), "__ivm_ranked", table=True))
            .where(template(f":r <= {self.keep + 1}", r=col(RANK)))
        )
        return select.group_by(*(col(k) for k in key_columns)) if key_columns else select

    def joined_lists(
        self,
        select: exp.Select,
        values: exp.Select,
        key_columns: list[str],
        names: tuple[str, str],
    ) -> exp.Select:
        """`select` (whose FROM is aliased `__ivm_m`) LEFT JOIN the ranked list of `values` on
        the keys, adding the columns `names` = (the list, `full`: no value left out). A key
        without values gets an empty list."""
        alias = f"__ivm_l{self.index}"
        ranked = self.ranked_select(values, key_columns, "__ivm_")
        cut = exp.func("COALESCE", col("__ivm_cut", alias), exp.false())
        listed, flag = names
        return select.select(
            exp.alias_(
                exp.func("COALESCE", col("__ivm_top", alias), self.empty()), listed, quoted=True
            ),
            exp.alias_(exp.not_(cut), flag, quoted=True),
        ).join(
            exp.alias_(exp.Subquery(this=ranked), alias, table=True),
            on=null_safe_match(
                [col(k, "__ivm_m") for k in key_columns], [col(k, alias) for k in key_columns]
            ),
            join_type="left",
        )

    # -- folding a delta in ----------------------------------------------------------------
    def joined(self, s: str, d: str) -> dict[str, exp.Expression]:
        """The kept values with their new counts (unsorted) and `full AND NOT cut`, computed
        once where the delta meets the stored row; `late` and `joined_flag` read them."""
        stored = exp.func("COALESCE", col(self.top, s), self.empty())
        full = exp.func("COALESCE", col(self.full, s), exp.true())
        delta = col(self.name("dlist"), d)
        dlist = template(f"SLICE(:l, 1, {self.keep})", l=delta)
        cut = exp.func("COALESCE", template(f"SIZE(:l) > {self.keep}", l=delta.copy()), exp.false())
        cmp = "<=" if self._is_min else ">="
        # Distinct under `<=>`, the equality the counts use (ARRAY_DISTINCT may keep -0.0
        # and 0.0 apart, which would count one value twice).
        values = template(
            "CONCAT(TRANSFORM(:l, __ivm_e -> __ivm_e.v), TRANSFORM(:d, __ivm_e -> __ivm_e.v))",
            l=stored, d=dlist,
        )  # fmt: skip
        distinct = template(
            "FILTER(:a, (__ivm_x, __ivm_i) -> NOT EXISTS(SLICE(:a, 1, __ivm_i), "
            "__ivm_y -> __ivm_y <=> __ivm_x))",
            a=values,
        )  # fmt: skip
        # A stored count is NULL where a build left it unknown (at least one): it stays
        # unknown unless the delta deletes the value, when whether any is left is not known
        # and the value is dropped (0). The inner TRANSFORM sums the value's stored (`s`)
        # and delta (`d`) counts once each, for the outer one to read twice.
        counted = template(
            "TRANSFORM(TRANSFORM(:vals, __ivm_x -> STRUCT(__ivm_x AS v, "
            "AGGREGATE(:l, CAST(0 AS BIGINT), (__ivm_a, __ivm_e) -> __ivm_a + "
            "IF(__ivm_e.v <=> __ivm_x, __ivm_e.n, CAST(0 AS BIGINT))) AS s, "
            "AGGREGATE(:d, CAST(0 AS BIGINT), (__ivm_a, __ivm_e) -> __ivm_a + "
            "IF(__ivm_e.v <=> __ivm_x, __ivm_e.n, CAST(0 AS BIGINT))) AS d)), "
            "__ivm_c -> STRUCT(__ivm_c.v AS v, CASE WHEN __ivm_c.s IS NULL AND __ivm_c.d < 0 "
            "THEN CAST(0 AS BIGINT) ELSE __ivm_c.s + __ivm_c.d END AS n))",
            vals=distinct, l=stored, d=dlist,
        )  # fmt: skip
        kept = template(
            "FILTER(:c, __ivm_e -> (__ivm_e.n IS NULL OR __ivm_e.n > 0) "
            f"AND (:f OR __ivm_e.v {cmp} ELEMENT_AT(:l, -1).v) "
            f"AND (NOT :cut OR __ivm_e.v {cmp} ELEMENT_AT(:d, -1).v))",
            c=counted, f=full, l=stored, cut=cut, d=dlist,
        )  # fmt: skip
        return {self.name("kept"): kept, self.name("whole"): exp.and_(full, exp.not_(cut))}

    def late(self, j: str) -> dict[str, exp.Expression]:
        """The merged list (`top'`, sorted and cut to `keep`) and flag (`full'`)."""
        kept = col(self.name("kept"), j)
        ordered = template("ARRAY_SORT(:k)", k=kept)
        if not self._is_min:
            ordered = exp.func("REVERSE", ordered)
        return {
            self.name("mtop"): template(f"SLICE(:o, 1, {self.keep})", o=ordered),
            self.name("mfull"): template(
                f":w AND SIZE(:k) <= {self.keep}", w=col(self.name("whole"), j), k=kept
            ),
        }

    def joined_flag(self, j: str) -> exp.Expression | None:
        # Nothing kept and the list was not known to be complete (an empty list is at most
        # `keep` long, so `full'` reduces to `full AND NOT cut`).
        return template(
            "SIZE(:k) = 0 AND NOT :w", k=col(self.name("kept"), j), w=col(self.name("whole"), j)
        )

    def merged(self, s: str, d: str) -> dict[str, exp.Expression]:
        flag = col(RECOMPUTE_FLAG, d)
        return {
            name: template(
                "CASE WHEN :flag THEN :rc ELSE :m END",
                flag=flag, rc=col(RECOMPUTED + name, d), m=col(self.name(f"m{role}"), d),
            )
            for name, role in ((self.top, "top"), (self.full, "full"))
        }  # fmt: skip

    def inserted(self, d: str) -> dict[str, exp.Expression]:
        return self.merged("", d)

    def visible(self) -> exp.Expression:
        return template("CASE WHEN SIZE(:t) > 0 THEN ELEMENT_AT(:t, 1).v END", t=col(self.top))


BOUND = "__ivm_bound"


def first_values(
    rows: exp.Select,
    key_columns: list[str],
    limit: int,
    ascending: bool,
    sample_rows: int = SAMPLE_ROWS,
) -> exp.Select:
    """Per key, the first `limit` distinct values of `rows` (columns: the keys and VALUE, one
    row per base row, the value not NULL) in rank order, each with its count (WEIGHT_SUM),
    and possibly some values after them (`ranked_select` keeps the first `limit`):

        bound(g)  = the limit-th distinct value of g in rank order among S_g,
                    S = any `sample_rows` rows of R (no bound where S_g has fewer values)
        first(R)  = { (g, v, |R_g,v|) : v ranks no later than bound(g) }

    Exact for any sample: S_g's distinct values are some of R_g's, so its limit-th ranks no
    earlier than R_g's, and every one of R_g's first `limit` values passes. What it saves:
    counting every distinct value shuffles a row per value (at SF 1 about a million line
    item prices; their list's build took 6.6 s, 2.1 s with the bound); the sample is the
    first rows Spark reads (a LIMIT), so it costs little. The sample's values are grouped
    before they are ranked, so they are distinct as GROUP BY sees them (-0.0 and 0.0 one
    value).

    >>> from dbt.adapters.spark_ivm.compiler.sql.templates import sql
    >>> print(sql(first_values(exp.select(VALUE).from_("r"), [], 3, ascending=False)))
    SELECT `__ivm_rows`.`__ivm_v`, COUNT(*) AS `__ivm_n` FROM (SELECT __ivm_v FROM r) AS \
__ivm_rows LEFT JOIN (SELECT IF(SIZE(REVERSE(ARRAY_SORT(COLLECT_LIST(`__ivm_v`)))) >= 3, \
ELEMENT_AT(REVERSE(ARRAY_SORT(COLLECT_LIST(`__ivm_v`))), 3), NULL) AS `__ivm_bound` FROM \
(SELECT `__ivm_v` FROM (SELECT __ivm_v FROM r LIMIT 65536) AS __ivm_sample GROUP BY \
`__ivm_v`) AS __ivm_seen) AS __ivm_b ON TRUE WHERE `__ivm_b`.`__ivm_bound` IS NULL OR \
`__ivm_rows`.`__ivm_v` >= `__ivm_b`.`__ivm_bound` GROUP BY `__ivm_rows`.`__ivm_v`
    """
    keys = [col(k) for k in key_columns]
    sample = rows.copy().limit(sample_rows)
    seen = (
        exp.Select()
        .select(*keys, col(VALUE))
        .from_(exp.alias_(exp.Subquery(this=sample), "__ivm_sample", table=True))
        .group_by(*keys, col(VALUE))
    )
    listed = template("ARRAY_SORT(COLLECT_LIST(:v))", v=col(VALUE))
    if not ascending:
        listed = exp.func("REVERSE", listed)
    bound = template(f"IF(SIZE(:l) >= {limit}, ELEMENT_AT(:l, {limit}), NULL)", l=listed)
    bounds = (
        exp.Select()
        .select(*keys, exp.alias_(bound, BOUND, quoted=True))
        .from_(exp.alias_(exp.Subquery(this=seen), "__ivm_seen", table=True))
    )
    if keys:
        bounds = bounds.group_by(*keys)
    passes = exp.LTE if ascending else exp.GTE
    within = exp.or_(
        exp.Is(this=col(BOUND, "__ivm_b"), expression=exp.null()),
        passes(this=col(VALUE, "__ivm_rows"), expression=col(BOUND, "__ivm_b")),
    )
    row_keys = [col(k, "__ivm_rows") for k in key_columns]
    counted = (
        exp.Select()
        .select(*row_keys, col(VALUE, "__ivm_rows"))
        .select(exp.alias_(template("COUNT(*)"), WEIGHT_SUM, quoted=True))
        .from_(exp.alias_(exp.Subquery(this=rows), "__ivm_rows", table=True))
        .join(
            exp.alias_(exp.Subquery(this=bounds), "__ivm_b", table=True),
            on=null_safe_match(row_keys, [col(k, "__ivm_b") for k in key_columns]),
            join_type="left",
        )
        .where(within)
    )
    return counted.group_by(*(k.copy() for k in row_keys), col(VALUE, "__ivm_rows"))
