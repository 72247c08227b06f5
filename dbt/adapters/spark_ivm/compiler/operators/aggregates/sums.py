"""sums: sum(x) and avg(x), exact for decimals and integers, bounded for doubles."""

from __future__ import annotations

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.operators.aggregates.rule import (
    AggregateRule,
    decimal_type,
)
from dbt.adapters.spark_ivm.compiler.sql.templates import col, template

_INTEGRAL = {
    exp.DataType.Type.TINYINT,
    exp.DataType.Type.SMALLINT,
    exp.DataType.Type.INT,
    exp.DataType.Type.BIGINT,
}
_FLOATING = {exp.DataType.Type.FLOAT, exp.DataType.Type.DOUBLE}

# A double sum is flagged for recompute when the magnitudes that went through it since its last
# exact SUM (`mag`) could have rounded it by more than this fraction of its value: the error of
# a running sum is about u * mag (u = 2^-53, each magnitude counted once), and 1e-11 leaves two
# orders of magnitude of margin under the 1e-9 that `ivm_consistent` allows.
DOUBLE_ERROR_BUDGET = 1e-11
_MAG_RATIO = DOUBLE_ERROR_BUDGET * 2.0**53  # flag when mag > _MAG_RATIO * |sum| (about 9e4)
# Weights of a decimal delta row (how often a row was inserted minus deleted) that multiply
# exactly: larger ones flag the group for recompute.
_WEIGHT_DIGITS = 10


def _dec(p: int, s: int) -> exp.DataType:
    return exp.DataType.build(f"decimal({p},{s})")


def _try_cast(node: exp.Expression, dtype: exp.DataType) -> exp.Expression:
    """CAST that gives NULL instead of failing when the value does not fit (also in ANSI mode)."""
    return exp.TryCast(this=node, to=dtype.copy())


def _kind(type_name: str | None) -> str:
    """'decimal', 'double' (float/double), 'integral' (tinyint..bigint) or 'other'."""
    if not type_name:
        return "other"
    this = exp.DataType.build(type_name, dialect="spark").this
    if this == exp.DataType.Type.DECIMAL:
        return "decimal"
    if this in _FLOATING:
        return "double"
    if this in _INTEGRAL:
        return "integral"
    return "other"


class SumRule(AggregateRule):
    """sum(x): sum' = sum + sum(w * x), nn' = nn + sum(w * [x not null]); sum(x) is NULL when nn = 0.

    Example: x {2, 5}; delete 5 -> sum 2, nn 1; delete 2 -> nn 0 -> sum(x) IS NULL.

    The arithmetic follows the argument's type so that the value is always Spark's SUM:

    * integers: Spark sums in bigint and (non-ANSI) wraps silently; w * x, the delta's SUM and
      s + d wrap the same way (all modulo 2^64), so the maintained value is Spark's exactly.
    * decimal(p,s): `sum` is decimal(P,s), P = min(38, p+10), Spark's SUM type. Every step is
      kept in types that Spark does not round (its allowPrecisionLoss rules cut the scale of
      decimal(38,s) * bigint to 6 and of decimal(38,s) + decimal(38,s) to s-1): a delta row
      contributes x or -x (weight +-1), or x * CAST(w AS DECIMAL(10,0)) where that product
      keeps scale s; s + d is added as decimal(P+1,s) (P < 38) or as two decimal(37,s)
      (P = 38). Where that is not possible - a weight beyond those, a delta or stored sum that
      overflowed to NULL, a new sum outside decimal(P,s) (Spark's SUM is then NULL) or one
      that needs all 38 digits - the group is flagged and recomputed from the base tables,
      which gives Spark's own result (NULL on overflow).
      Example (decimal(38,8)): stored 4938271560.49382700, delta +0.00000033 ->
      4938271560.49382733 (decimal(37,8) + decimal(37,8) = decimal(38,8), no scale lost).
    * double: `sum` holds only the finite values; `pinf`, `ninf`, `nan` count (with weights)
      the +Infinity, -Infinity and NaN values; the visible value is NaN if any NaN or both
      infinities are present, else +-Infinity if one is, else the finite sum: Spark's
      result, and deleting an infinity leaves a finite sum, not inf - inf = NaN. `mag` adds up
      the magnitudes of everything that went into `sum` since its last exact SUM (the delta's
      |w * x| and each new |sum|); when mag > 9e4 * |sum| (rounding error could pass 1e-11
      of the value, see DOUBLE_ERROR_BUDGET), or the sum is not finite, the group is
      recomputed. Example: {1.0} + insert 1e16 -> sum 1e16, mag ~3e16; delete 1e16 -> sum
      0.0, mag ~4e16 > 9e4 * 0 -> recomputed: sum 1.0, mag 1.0.

    >>> from sqlglot import parse_one
    >>> from dbt.adapters.spark_ivm.compiler.ir import AggKind, Aggregate
    >>> from dbt.adapters.spark_ivm.compiler.sql.templates import sql
    >>> rule = SumRule(1, Aggregate(AggKind.SUM, parse_one("sum(t.x)"), parse_one("t.x")), "int")
    >>> rule.state_columns()
    ['__ivm_sum_1', '__ivm_nn_1']
    >>> sql(rule.delta(exp.column("w"))["__ivm_sum_1"])  # int sums as bigint, as Spark's SUM
    'SUM(CAST(`__ivm_a1` AS BIGINT) * w)'
    >>> print(sql(rule.merged("s", "d")["__ivm_sum_1"]).replace(" ELSE", "\\nELSE"))
    CASE WHEN `s`.`__ivm_nn_1` + `d`.`__ivm_nn_1` = 0 THEN NULL
    ELSE COALESCE(`s`.`__ivm_sum_1`, 0) + COALESCE(`d`.`__ivm_sum_1`, 0) END
    """

    def _input(self, x: exp.Expression) -> exp.Expression:
        if self._kind == "double":
            return exp.cast(x, exp.DataType.build("double"))
        return x

    @property
    def _kind(self) -> str:
        return _kind(self.arg_type)

    @property
    def _dec_type(self) -> tuple[int, int]:
        p, s = decimal_type(self.arg_type or "") or (10, 0)
        return p, s

    @property
    def _sum_type(self) -> exp.DataType:
        """Spark's SUM type for a decimal argument: decimal(min(38, p+10), s)."""
        p, s = self._dec_type
        return _dec(min(38, p + 10), s)

    # -- the helper columns ----------------------------------------------------------------
    def state_columns(self) -> list[str]:
        if self._kind == "double":
            return [self.name(r) for r in ("sum", "nn", "pinf", "ninf", "nan", "mag")]
        return [self.name("sum"), self.name("nn")]

    def initial(self) -> dict[str, exp.Expression]:
        x = self._input(self.arg())
        out = {
            self.name("sum"): template("SUM(:x)", x=x),
            self.name("nn"): template("COUNT(:x)", x=x),
        }
        if self._kind == "double":
            fin = self._finite(x)
            out[self.name("sum")] = template("SUM(:x)", x=fin)
            out[self.name("mag")] = template("SUM(ABS(:x))", x=fin)
            for role, cond in self._non_finite(x).items():
                out[self.name(role)] = (
                    template("COUNT_IF(:c)", c=cond) if cond is not None else _zero_count()
                )
        return out

    @property
    def _floating(self) -> bool:
        """Can the argument be NaN or infinite? (an int or a decimal cast to double cannot)."""
        kind = _kind(self.arg_type)
        return kind == "double" or kind == "other"

    def _finite(self, x: exp.Expression) -> exp.Expression:
        """x when it is a finite double, else NULL (NaN and infinities are counted apart)."""
        if not self._floating:
            return x
        return template(
            "CASE WHEN ISNAN(:x) OR ABS(:x) = CAST('Infinity' AS DOUBLE) THEN NULL ELSE :x END",
            x=x,
        )

    def _non_finite(self, x: exp.Expression) -> dict[str, exp.Expression | None]:
        """The conditions counted by pinf, ninf and nan (None: never true for this type; Spark
        also fails to push a COUNT_IF of a constant condition down into Iceberg)."""
        if not self._floating:
            return {"pinf": None, "ninf": None, "nan": None}
        return {
            "pinf": template(":x = CAST('Infinity' AS DOUBLE)", x=x),
            "ninf": template(":x = CAST('-Infinity' AS DOUBLE)", x=x),
            "nan": template("ISNAN(:x)", x=x),
        }

    def recompute(self) -> dict[str, exp.Expression]:
        if self._kind in ("decimal", "double"):
            return self.initial()
        return {}

    def delta(self, w: exp.Expression) -> dict[str, exp.Expression]:
        x = self._input(col(self.arg_column))
        nn = template("SUM(CASE WHEN :x IS NULL THEN 0 ELSE :w END)", x=x, w=w)
        if self._kind == "decimal":
            c = self._decimal_contribution(x, w)
            total = exp.cast(template("SUM(:c)", c=c), self._sum_type)
            inexact = template(
                "COUNT(:c) < COUNT(:x) OR (:total IS NULL AND COUNT(:x) > 0)",
                c=c, x=x, total=total,
            )  # fmt: skip
            return {self.name("sum"): total, self.name("nn"): nn, self.name("inexact"): inexact}
        if self._kind == "double":
            fin = self._finite(x)
            out = {
                self.name("sum"): template("SUM(:x * :w)", x=fin, w=w),
                self.name("nn"): nn,
                self.name("mag"): template("SUM(ABS(:x * :w))", x=fin, w=w),
            }
            for role, cond in self._non_finite(x).items():
                out[self.name(role)] = (
                    template("SUM(CASE WHEN :c THEN :w ELSE 0 END)", c=cond, w=w)
                    if cond is not None
                    else _zero_count()
                )
            return out
        if self._kind == "integral":
            x = exp.cast(x, exp.DataType.build("bigint"))
        return {self.name("sum"): template("SUM(:x * :w)", x=x, w=w), self.name("nn"): nn}

    def _decimal_contribution(self, x: exp.Expression, w: exp.Expression) -> exp.Expression:
        """w * x without loss of scale, or NULL where that cannot be guaranteed: x and -x for
        weights +-1; x * CAST(w AS DECIMAL(10,0)) where Spark's product type keeps scale s
        (p + 11 <= 38, or s <= 6); a product that overflows is NULL too."""
        p, s = self._dec_type
        case = exp.Case()
        case = case.when(template(":w = 1", w=w), x.copy())
        case = case.when(template(":w = -1", w=w), exp.Neg(this=x.copy()))
        if p + _WEIGHT_DIGITS + 1 <= 38 or s <= 6:
            product = template(
                ":x * :w", x=x, w=_try_cast(w, _dec(_WEIGHT_DIGITS, 0))
            )  # NULL when |w| >= 10^10
            case = case.when(exp.true(), product)
        return case

    # -- folding a delta in ----------------------------------------------------------------
    def _exact_add(self, s: str, d: str) -> exp.Expression:
        """s.sum + d.sum as decimal(P,s) without rounding, NULL when that is impossible (the
        result does not fit decimal(P,s), or P = 38 and an operand needs all 38 digits)."""
        total = self.name("sum")
        dtype = self._sum_type
        p_sum, scale = (int(e.this.name) for e in dtype.expressions)
        zero = exp.cast(exp.Literal.number(0), dtype)
        a = exp.func("COALESCE", col(total, s), zero)
        b = exp.func("COALESCE", col(total, d), zero.copy())
        if p_sum < 38:
            return _try_cast(template(":a + :b", a=a, b=b), dtype)
        if scale >= 38:
            return exp.cast(exp.null(), dtype)
        narrow = _dec(37, scale)
        return template(":a + :b", a=_try_cast(a, narrow), b=_try_cast(b, narrow))

    def _double_new(self, s: str, d: str) -> tuple[exp.Expression, exp.Expression]:
        """(new finite sum, new mag) of a stored group s after its delta d."""
        total, mag = self.name("sum"), self.name("mag")
        new = template(
            "COALESCE(:s, CAST(0 AS DOUBLE)) + COALESCE(:d, CAST(0 AS DOUBLE))",
            s=col(total, s), d=col(total, d),
        )  # fmt: skip
        new_mag = template(
            "COALESCE(:sm, CAST(0 AS DOUBLE)) + COALESCE(:dm, CAST(0 AS DOUBLE)) "
            "+ CASE WHEN COALESCE(:dm, CAST(0 AS DOUBLE)) = 0 THEN 0 ELSE ABS(:new) END",
            sm=col(mag, s), dm=col(mag, d), new=new,
        )  # fmt: skip
        return new, new_mag

    def needs_recompute(self, s: str, d: str) -> exp.Expression | None:
        if self._kind == "decimal":
            flag = template(
                ":inexact OR (:ssum IS NULL AND :snn <> 0) OR :add IS NULL",
                inexact=col(self.name("inexact"), d),
                ssum=col(self.name("sum"), s),
                snn=col(self.name("nn"), s),
                add=self._exact_add(s, d),
            )
        elif self._kind == "double":
            new, new_mag = self._double_new(s, d)
            flag = template(
                "ISNAN(:new) OR ABS(:new) = CAST('Infinity' AS DOUBLE) "
                f"OR :mag > {_MAG_RATIO!r} * ABS(:new)",
                new=new, mag=new_mag,
            )  # fmt: skip
        else:
            return None
        return exp.func("COALESCE", exp.Paren(this=flag), exp.false())

    def _or_recomputed(self, column: str, d: str, value: exp.Expression) -> exp.Expression:
        return self.or_recomputed(column, d, value, witness=self.name("nn"))

    def merged(self, s: str, d: str) -> dict[str, exp.Expression]:
        total, nn = self.name("sum"), self.name("nn")

        def added(c: str) -> exp.Expression:
            return template(":s + :d", s=col(c, s), d=col(c, d))

        if self._kind == "other" or self._kind == "integral":
            return {
                total: template(
                    "CASE WHEN :snn + :dnn = 0 THEN NULL ELSE COALESCE(:s, 0) + COALESCE(:d, 0) END",
                    snn=col(nn, s), dnn=col(nn, d), s=col(total, s), d=col(total, d),
                ),
                nn: added(nn),
            }  # fmt: skip
        if self._kind == "decimal":
            value = template(
                "CASE WHEN :snn + :dnn = 0 THEN NULL ELSE :add END",
                snn=col(nn, s), dnn=col(nn, d), add=self._exact_add(s, d),
            )  # fmt: skip
            return {
                total: self._or_recomputed(total, d, value),
                nn: self._or_recomputed(nn, d, added(nn)),
            }
        new, new_mag = self._double_new(s, d)
        out = {
            total: self._or_recomputed(total, d, new),
            self.name("mag"): self._or_recomputed(self.name("mag"), d, new_mag),
        }
        for c in (nn, self.name("pinf"), self.name("ninf"), self.name("nan")):
            out[c] = self._or_recomputed(c, d, added(c))
        return out

    def inserted(self, d: str) -> dict[str, exp.Expression]:
        if self._kind in ("decimal", "double"):
            return {c: self._or_recomputed(c, d, col(c, d)) for c in self.state_columns()}
        return super().inserted(d)

    # -- the visible value -----------------------------------------------------------------
    def _visible_sum(self) -> exp.Expression:
        """The sum as Spark gives it, from the helpers (NULL when nn = 0 is left to callers)."""
        if self._kind != "double":
            return col(self.name("sum"))
        return template(
            "CASE WHEN :nan > 0 OR (:pinf > 0 AND :ninf > 0) THEN CAST('NaN' AS DOUBLE) "
            "WHEN :pinf > 0 THEN CAST('Infinity' AS DOUBLE) "
            "WHEN :ninf > 0 THEN CAST('-Infinity' AS DOUBLE) ELSE :s END",
            nan=col(self.name("nan")), pinf=col(self.name("pinf")),
            ninf=col(self.name("ninf")), s=col(self.name("sum")),
        )  # fmt: skip

    def visible(self) -> exp.Expression:
        return template(
            "CASE WHEN :nn = 0 THEN NULL ELSE :s END",
            nn=col(self.name("nn")),
            s=self._visible_sum(),
        )


def _zero_count() -> exp.Expression:
    return exp.cast(exp.Literal.number(0), exp.DataType.build("bigint"))


class AvgRule(SumRule):
    """avg(x) = sum / nn, kept as SumRule's helpers (with their exactness and recomputes);
    NULL when nn = 0.

    Spark averages a decimal(p,s) as its decimal(p+10,s) sum divided by the count, rounded
    HALF_UP once to decimal(p+4,s+4) (R,T), NULL when that overflows; anything else as a
    double sum (infinities and NaN as in SumRule) divided by the double count. For decimals a
    plain `sum / count` has the wrong scale (Spark types decimal(38,8) / decimal(20,0) as
    decimal(38,8), and a second rounding changes some last digits), so the view divides in
    types whose scale is exactly T: sum cast to decimal(34,s) (T >= 6), or, for larger sums
    and for s < 2, sum = a * n + r (r = sum % n, a whole), avg = a + r / n.
    Example: x {1, 2, 2} decimal(38,8) -> sum 5, nn 3 -> 1.666666666667 (decimal(38,12)), not
    1.66666667; delete 1 -> sum 4, nn 2 -> avg 2.000000000000.
    Not exact (documented limits): an avg of decimal(p,s<2) over 10^14 or more rows may differ
    in the last digit; one of decimal(>=34,s<2) at or above 10^32 shows NULL; for T >= 7 an
    avg in the top decade of decimal(38,T), or one with s > 15 and |sum| >= 10^(34-s), may
    differ in the last digit.
    """

    def _input(self, x: exp.Expression) -> exp.Expression:
        if decimal_type(self.arg_type or ""):
            return x
        return exp.cast(x, exp.DataType.build("double"))

    @property
    def _kind(self) -> str:
        return "decimal" if decimal_type(self.arg_type or "") else "double"

    def visible(self) -> exp.Expression:
        nn, total = col(self.name("nn")), col(self.name("sum"))
        dec = decimal_type(self.arg_type or "")
        if dec:
            value = _decimal_avg(total, nn, *dec)
        else:
            value = template(":s / CAST(:nn AS DOUBLE)", s=self._visible_sum(), nn=nn)
        return template("CASE WHEN :nn = 0 THEN NULL ELSE :v END", nn=nn, v=value)


def _decimal_avg(total: exp.Expression, nn: exp.Expression, p: int, s: int) -> exp.Expression:
    """round_half_up(total / nn, T) as decimal(R,T), R = min(38, p+4), T = min(38, s+4), with
    one rounding at scale T (or at scale >= 19 first where T < 6), as Spark's avg."""
    big_r, t = min(38, p + 4), min(38, s + 4)
    p_sum = min(38, p + 10)
    result = _dec(big_r, t)
    n = exp.cast(nn, _dec(19, 0))
    plain = exp.cast(template(":s / CAST(:n AS DECIMAL(20,0))", s=total, n=nn), result)
    if s > 34 or big_r - t < 2:
        return plain  # degenerate types (scale near 38): the plain quotient
    r = template(":s % :n", s=total, n=n)  # exact, |r| < n, sign of the sum
    a = template("(:s - :r) / :n", s=total, r=r, n=n)  # a whole number, exact
    if t < 6:
        # r / n is typed with scale >= 19, then rounded to T; a + f keeps scale T (T <= 6).
        f = exp.cast(template(":r / :n", r=r, n=n), _dec(t + 1, t))
        whole = exp.cast(a, _dec(big_r - t, 0))
        return exp.cast(template(":a + :f", a=whole, f=f), result)
    # decimal(34,s) / decimal(19,0) is typed decimal(38, s+4): one rounding at T, as Spark.
    direct = exp.cast(template(":s / :n", s=_try_cast(total, _dec(34, s)), n=n), result)
    if p_sum <= 34:
        return direct
    if s > 15:
        big = plain
    else:
        f = exp.cast(template(":r / :n", r=_try_cast(r, _dec(34, s)), n=n), _dec(t + 1, t))
        # a + f is exact while its precision stays <= 38; in the top decade of decimal(38,T)
        # Spark's addition keeps one digit less (the last digit may then differ).
        digits = big_r - t - (1 if big_r == 38 else 0)
        exact = exp.cast(template(":a + :f", a=_try_cast(a, _dec(digits, 0)), f=f), result)
        top = exp.cast(template(":a + :f", a=exp.cast(a, _dec(big_r - t, 0)), f=f), result)
        big = exp.func("COALESCE", exact, top)
    return template(
        "CASE WHEN :fits IS NOT NULL THEN :direct ELSE :big END",
        fits=_try_cast(total, _dec(34, s)), direct=direct, big=big,
    )  # fmt: skip
