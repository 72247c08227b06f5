"""moments: var_pop, var_samp, stddev_pop, stddev_samp (variance, stddev, std) from shifted
sums of the group's values, with an error bound that sends a group to recompute.

Notation as in `rule`: `s` the stored state row, `d` the group's aggregated delta row, w the
weight of a delta row. The argument is cast to double, as Spark does.
"""

from __future__ import annotations

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.operators.aggregates.rule import AggregateRule
from dbt.adapters.spark_ivm.compiler.operators.aggregates.sums import DOUBLE_ERROR_BUDGET
from dbt.adapters.spark_ivm.compiler.sql.templates import col, template

#: Our own rounding: flag when the bound on the error of M2 exceeds this many times M2
#: (u * bound > DOUBLE_ERROR_BUDGET * M2, u = 2^-53), as the double sum rule does.
_MAG_RATIO = DOUBLE_ERROR_BUDGET * 2.0**53
#: Spark's own rounding: its one-pass algorithm loses about u * |mean| / stddev of the
#: result (per row, growing with the group), so where mean^2 > this * variance its value is
#: not reproducible to 1e-9 by any other order of additions; such a group takes Spark's own
#: value by recompute. 1e8 is |mean| / stddev > 1e4, an error of about 2e-12 per row.
#: (Equal values are exact in both: Spark's M2 is 0, and ours is 0 with a bound of 0.)
_SPARK_CONDITION = 1e8

#: (population or sample, square root or not) by call class.
_VARIANTS: dict[type[exp.Expression], tuple[bool, bool]] = {
    exp.VariancePop: (True, False),
    exp.Variance: (False, False),
    exp.StddevPop: (True, True),
    exp.StddevSamp: (False, True),
    exp.Stddev: (False, True),
}


def moment_variant(call: exp.Expression) -> tuple[bool, bool] | None:
    """(population, square root) of a variance/stddev call, None for any other call."""
    return _VARIANTS.get(type(call))


_INF = "CAST('Infinity' AS DOUBLE)"


def _finite(x: exp.Expression) -> exp.Expression:
    return template(f"CASE WHEN ISNAN(:x) OR ABS(:x) = {_INF} THEN NULL ELSE :x END", x=x)


def _zero() -> exp.Expression:
    return exp.cast(exp.Literal.number(0), exp.DataType.build("double"))


class MomentRule(AggregateRule):
    """var_pop/var_samp/stddev_pop/stddev_samp: per group n (finite values), nf (NaN and
    infinities), a shift K and the shifted sums s1 = sum(x - K), s2 = sum((x - K)^2), so
    that M2 = sum((x - mean)^2) = s2 - s1^2 / n; var_pop = M2 / n, var_samp = M2 / (n - 1).

    Sums about zero would lose every digit of a small spread around a large mean, so K is
    the group's mean at its last build or recompute (s1 = 0, s2 = Spark's VAR_POP * n).
    A delta is aggregated about a shift of its own, K_d = the least finite value of the
    group's delta rows (a window over the compacted rows: the aggregate does not see the
    state): dn = sum(w), d1 = sum(w (x - K_d)), d2 = sum(w (x - K_d)^2), and folded in
    where the state is joined, with delta = K_d - K:

        s1' = s1 + d1 + delta dn,    s2' = s2 + d2 + 2 delta d1 + delta^2 dn.

    e1, e2 add up the magnitudes of every term that went into s1, s2 since the last exact
    value; a group is recomputed from the base tables when the rounding they allow,
    u (e2 + 2 |s1| e1 / n + s1^2 / n), could pass 1e-11 of M2 (this also catches M2 near 0
    and a shift far from today's mean), or when mean^2 > 1e8 M2, where Spark's own result
    carries more rounding than the test tolerance and only its own value matches (unless
    M2 = 0: equal values are exact in both).
    Visible as Spark 3.5: NULL without values (var_samp: with fewer than two), NaN when a
    NaN or infinity is among them, 0 for one value.

    Example: x {1, 2, 3} -> n 3, K 2, s1 0, s2 2 (var_pop 2/3); insert 5: K_d 5, d1 0,
    d2 0, delta 3 -> s1 3, s2 2 + 9 = 11, n 4 -> M2 = 11 - 9/4 = 8.75, var_samp 2.9166...

    >>> from sqlglot import parse_one
    >>> from dbt.adapters.spark_ivm.compiler.ir import AggKind, Aggregate
    >>> call = parse_one("var_pop(t.x)", dialect="spark")
    >>> rule = MomentRule(0, Aggregate(AggKind.MOMENT, call, parse_one("t.x")), "double")
    >>> print(*rule.state_columns())  # n, nf, K, s1, s2, e1, e2
    __ivm_mn_0 __ivm_mnf_0 __ivm_mk_0 __ivm_ms1_0 __ivm_ms2_0 __ivm_me1_0 __ivm_me2_0
    """

    @property
    def _variant(self) -> tuple[bool, bool]:
        variant = moment_variant(self.agg.call)
        assert variant is not None
        return variant

    _ROLES = ("mn", "mnf", "mk", "ms1", "ms2", "me1", "me2")

    def state_columns(self) -> list[str]:
        return [self.name(r) for r in self._ROLES]

    @property
    def shift(self) -> str:
        """The delta rows' column holding their group's shift K_d."""
        return self.name("shift")

    def _new(self, role: str) -> str:
        return self.name(f"new_{role}")

    def _x(self, x: exp.Expression) -> exp.Expression:
        return exp.cast(x, exp.DataType.build("double"))

    # -- build and recompute: Spark's own values ------------------------------------------
    def initial(self) -> dict[str, exp.Expression]:
        x = self._x(self.arg())
        fx = _finite(x)
        m2 = template("COALESCE(VAR_POP(:x) * COUNT(:x), :z)", x=fx, z=_zero())
        return {
            self.name("mn"): template("COUNT(:x)", x=fx),
            self.name("mnf"): template(f"COUNT_IF(ISNAN(:x) OR ABS(:x) = {_INF})", x=x),
            self.name("mk"): template("AVG(:x)", x=fx),
            self.name("ms1"): _zero(),
            self.name("ms2"): m2,
            # |sum(x - AVG(x))| <= u * sum(|x|): the error of s1 = 0 after AVG's rounding
            self.name("me1"): template("COALESCE(SUM(ABS(:x)), :z)", x=fx, z=_zero()),
            self.name("me2"): m2.copy(),
        }

    def recompute(self) -> dict[str, exp.Expression]:
        return self.initial()

    # -- the delta, about its own shift ---------------------------------------------------
    def row_values(self, keys: list[exp.Expression]) -> dict[str, exp.Expression]:
        """Per compacted delta row: the least finite value of its group's delta rows."""
        # an ungrouped model's rows are one partition: a constant says so without Spark's
        # warning about a window with no PARTITION BY at every refresh
        window = exp.Window(
            this=template("MIN(:x)", x=_finite(self._x(col(self.arg_column)))),
            partition_by=[k.copy() for k in keys] or [exp.Literal.number(0)],
        )
        return {self.shift: window}

    def delta(self, w: exp.Expression) -> dict[str, exp.Expression]:
        x = self._x(col(self.arg_column))
        fx = _finite(x)
        dx = template(":x - :k", x=fx, k=col(self.shift))
        z = _zero()
        return {
            self.name("mn"): template("SUM(CASE WHEN :x IS NULL THEN 0 ELSE :w END)", x=fx, w=w),
            self.name("mnf"): template(
                f"SUM(CASE WHEN ISNAN(:x) OR ABS(:x) = {_INF} THEN :w ELSE 0 END)", x=x, w=w
            ),
            self.name("mk"): template("MIN(:k)", k=col(self.shift)),
            self.name("ms1"): template("COALESCE(SUM(:w * :dx), :z)", w=w, dx=dx, z=z),
            self.name("ms2"): template("COALESCE(SUM(:w * :dx * :dx), :z)", w=w, dx=dx, z=z),
            self.name("me1"): template("COALESCE(SUM(ABS(:w * :dx)), :z)", w=w, dx=dx, z=z),
            self.name("me2"): template("COALESCE(SUM(ABS(:w) * :dx * :dx), :z)", w=w, dx=dx, z=z),
        }

    # -- folding it in --------------------------------------------------------------------
    def _folded(self, s: str, d: str) -> dict[str, exp.Expression]:
        """The group's new helper values (before any recompute); `s` may be no row."""
        z = _zero()

        def stored(role: str) -> exp.Expression:
            return template("COALESCE(:c, :z)", c=col(self.name(role), s), z=z.copy())

        def delta(role: str) -> exp.Expression:
            return col(self.name(role), d)

        n = template("COALESCE(:s, 0) + :d", s=col(self.name("mn"), s), d=delta("mn"))
        k = template("COALESCE(:s, :d)", s=col(self.name("mk"), s), d=delta("mk"))
        shift = template("COALESCE(:d - :k, :z)", d=delta("mk"), k=k, z=z.copy())
        dn = exp.cast(delta("mn"), exp.DataType.build("double"))
        s1 = template(":s + :d + :t * :n", s=stored("ms1"), d=delta("ms1"), t=shift, n=dn)
        s2 = template(
            ":s + :d + 2 * :t * :d1 + :t * :t * :n",
            s=stored("ms2"), d=delta("ms2"), t=shift, d1=delta("ms1"), n=dn,
        )  # fmt: skip
        e1 = template(
            ":s + :d + ABS(:t * :n) + ABS(:s1)",
            s=stored("me1"), d=delta("me1"), t=shift, n=dn, s1=s1,
        )  # fmt: skip
        e2 = template(
            ":s + :d + ABS(2 * :t * :d1) + :t * :t * ABS(:n) + ABS(:s2)",
            s=stored("me2"), d=delta("me2"), t=shift, d1=delta("ms1"), n=dn, s2=s2,
        )  # fmt: skip

        def unless_empty(value: exp.Expression, empty: exp.Expression) -> exp.Expression:
            # a group left without finite values starts again from exact zeros
            return template("CASE WHEN :n = 0 THEN :e ELSE :v END", n=n, e=empty, v=value)

        return {
            "mn": n,
            "mnf": template("COALESCE(:s, 0) + :d", s=col(self.name("mnf"), s), d=delta("mnf")),
            "mk": unless_empty(k, exp.cast(exp.null(), exp.DataType.build("double"))),
            "ms1": unless_empty(s1, z.copy()),
            "ms2": unless_empty(s2, z.copy()),
            "me1": unless_empty(e1, z.copy()),
            "me2": unless_empty(e2, z.copy()),
        }

    def joined(self, s: str, d: str) -> dict[str, exp.Expression]:
        return {self._new(role): node for role, node in self._folded(s, d).items()}

    def delta_table_columns(self) -> list[str]:
        return [*self.delta(col("__ivm_w")), *(self._new(r) for r in self._ROLES)]

    def joined_flag(self, j: str) -> exp.Expression | None:
        def new(role: str) -> exp.Expression:
            return col(self._new(role), j)

        n = exp.cast(new("mn"), exp.DataType.build("double"))
        s1, s2, e1, e2, k = new("ms1"), new("ms2"), new("me1"), new("me2"), new("mk")
        m2 = template(":s2 - :s1 * :s1 / NULLIF(:n, 0)", s2=s2, s1=s1, n=n)
        mean = template(":k + :s1 / NULLIF(:n, 0)", k=k, s1=s1, n=n)
        flag = template(
            f"""
            :n >= 2 AND (
                ISNAN(:m2) OR ABS(:m2) = {_INF} OR ISNAN(:mean) OR ABS(:mean) = {_INF}
                OR :e2 + 2 * ABS(:s1) * :e1 / NULLIF(:n, 0) + :s1 * :s1 / NULLIF(:n, 0)
                    > {_MAG_RATIO!r} * :m2
                OR (:m2 > 0 AND :n * :mean * :mean > {_SPARK_CONDITION!r} * :m2)
            )
            """,
            n=n, m2=m2, mean=mean, e1=e1, e2=e2, s1=s1,
        )  # fmt: skip
        # a comparison that cannot be evaluated sends the group to the base tables
        return exp.func("COALESCE", exp.Paren(this=flag), exp.true())

    def merged(self, s: str, d: str) -> dict[str, exp.Expression]:
        witness = self.name("mn")
        return {
            self.name(r): self.or_recomputed(self.name(r), d, col(self._new(r), d), witness)
            for r in self._ROLES
        }

    def inserted(self, d: str) -> dict[str, exp.Expression]:
        return self.merged("", d)

    # -- the visible value ----------------------------------------------------------------
    def visible(self) -> exp.Expression:
        population, root = self._variant
        n, nf = col(self.name("mn")), col(self.name("mnf"))
        m2 = template(
            "GREATEST(:s2 - :s1 * :s1 / CAST(NULLIF(:n, 0) AS DOUBLE), :z)",
            s2=col(self.name("ms2")), s1=col(self.name("ms1")), n=n, z=_zero(),
        )  # fmt: skip
        divisor = (
            "CAST(NULLIF(:n, 0) AS DOUBLE)" if population else "CAST(NULLIF(:n - 1, 0) AS DOUBLE)"
        )
        value = template(
            f"CASE WHEN :n = 1 THEN :z ELSE :m2 / {divisor} END", n=n, m2=m2, z=_zero()
        )
        if root:
            value = exp.func("SQRT", value)
        least = 1 if population else 2
        return template(
            f"CASE WHEN :n + :nf < {least} THEN CAST(NULL AS DOUBLE) "
            "WHEN :nf > 0 THEN CAST('NaN' AS DOUBLE) ELSE :v END",
            n=n, nf=nf, v=value,
        )  # fmt: skip
