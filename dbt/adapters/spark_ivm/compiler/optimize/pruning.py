"""pruning: restrict the other inputs of a delta term to the join keys its delta touches.

A delta term `dR_i JOIN R_j ON R_j.c = R_i.d` can only produce rows from the R_j rows whose
`c` equals some `d` in the log of R_i. Stating that as literals,

    term' = term WHERE R_j.c BETWEEN min(d) AND max(d) [AND R_j.c IN (d_1, .., d_n)]

(over the log's non-NULL `d`; FALSE when it has none) leaves the term's rows unchanged, and
Iceberg prunes the data files whose min/max statistics of `c` miss the range (or every
listed value) at planning time: a refresh over a few changed orders reads the line-item
files of those orders, not the whole table.

Too many keys to list (more than MAX_LISTED_KEYS) are split into at most MAX_RUNS runs at
their largest gaps, `c BETWEEN a1 AND b1 OR c BETWEEN a2 AND b2 ..`, for numbers and dates:
the usual change of an OLTP table, updates somewhere in the middle plus inserts with new keys
at the top, is two runs, and one range from the lowest to the highest key would cover
everything between them.

Example: `lineitem l JOIN orders o ON l.l_orderkey = o.o_orderkey`, orders 17 and 42
updated. The term `l@new JOIN log(o)` gets `l.l_orderkey BETWEEN 17 AND 42 AND
l.l_orderkey IN (17, 42)`.

Only where the equality holds for every row of the term: a conjunct of WHERE, or of the ON
of a step that the term joins as an inner join. That covers the matched part of an outer
join, whose delta terms join the changed input as an inner join (`dC JOIN o@old` of
`customers c LEFT JOIN orders o`), but never an outer join inside a term, which keeps its
preserved side's rows whether they match or not (a key filter there would drop padded rows),
nor the padded-row terms of `outer_join.py`, which read no log. Only top-level equality
conjuncts between two columns of the same type, and only types `KeyCodec` carries exactly
from the log into the SQL (integers, decimals, strings, dates).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.ir import JoinKind, KeyRange, Query
from dbt.adapters.spark_ivm.compiler.operators.delta import Prefix, Term
from dbt.adapters.spark_ivm.compiler.sql.templates import col, conjuncts, sql, table

# Iceberg stops evaluating an IN list against file statistics beyond 200 values; the range
# alone still prunes when the keys are clustered.
MAX_LISTED_KEYS = 200
# Intervals of an OR of ranges, when the keys are too many to list.
MAX_RUNS = 16
_EXACT_TEXT_TYPE = re.compile(
    r"^(tinyint|smallint|int|integer|bigint|string|date|decimal\(\d+,\s*\d+\))$"
)


@dataclass(frozen=True)
class KeyLink:
    """`inputs[other].other_column = inputs[delta].delta_column`, a top-level conjunct of the
    ON of the step that joins input `step`, or of WHERE (`step` None)."""

    delta: int
    delta_column: str
    other: int
    other_column: str
    dtype: str
    step: int | None = None


def key_links(query: Query) -> list[KeyLink]:
    """Every (delta input, other input) pair a key filter can be derived for, both ways."""
    by_alias = {inp.alias: i for i, inp in enumerate(query.inputs)}
    links: list[KeyLink] = []
    nodes: list[tuple[int | None, exp.Expression | None]] = [
        (step.index, step.on) for step in query.steps
    ]
    nodes.append((None, query.where))
    for step, conjunct in ((s, c) for s, n in nodes for c in conjuncts(n)):
        if not isinstance(conjunct, exp.EQ):
            continue
        left, right = conjunct.this, conjunct.expression
        if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
            continue
        a, b = by_alias.get(left.table), by_alias.get(right.table)
        if a is None or b is None or a == b:
            continue
        type_a = dict(query.inputs[a].columns).get(left.name, "")
        type_b = dict(query.inputs[b].columns).get(right.name, "")
        if type_a.lower() != type_b.lower() or not exact_key_type(type_a):
            continue
        links.append(KeyLink(a, left.name, b, right.name, type_a, step))
        links.append(KeyLink(b, right.name, a, left.name, type_a, step))
    return links


def enforced(term: Term, query: Query, step: int | None) -> bool:
    """Does every row of `term` satisfy the ON of the step joining input `step` (None: WHERE)?

    True for WHERE and for the steps the term joins itself (always inner joins); for a step
    inside the term's prefix only when that step is an inner join of the model and no later
    RIGHT or FULL join of the prefix NULL-pads its inputs (padded rows fail the equality).
    """
    if step is None or any(index == step for index, _ in term.joins):
        return True
    if not isinstance(term.base, Prefix) or step > term.base.last:
        return False
    last = term.base.last
    kinds = {s.index: s.kind for s in query.steps}
    padding = (JoinKind.RIGHT, JoinKind.FULL)
    return kinds.get(step) is JoinKind.INNER and not any(
        kinds[i] in padding for i in range(step + 1, last + 1)
    )


class KeyCodec:
    """How one key type travels from a log to a literal without losing a value.

    A key is collected as text and written back into the refresh's SQL. The text must name
    exactly the value it came from, whatever the data holds, and must be inert in SQL:
    strings can hold quotes, backslashes, `${...}` (which Spark's variable substitution
    expands inside string literals), NUL and other control characters; dates can lie
    outside years 1-9999, where their text form is not ISO. So each type has its own
    encoding, all of them plain digits or hex digits:

    * integers and decimals: their text (`CAST(x AS STRING)` casts back exactly; a decimal
      may come as `1E-8`, which casts back too);
    * dates: the day number (`UNIX_DATE`), back with `DATE_FROM_UNIX_DATE`;
    * strings: the hex of their UTF-8 bytes, back with `CAST(UNHEX(..) AS STRING)`.

    Spark folds the decoding of a literal into a constant before it pushes filters into the
    Iceberg scan, so the file pruning is unchanged.

    >>> sql(KeyCodec.of("string").decode("2478", "string"))
    "CAST(UNHEX('2478') AS STRING)"
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind

    @staticmethod
    def of(dtype: str) -> KeyCodec:
        dtype = dtype.lower()
        if dtype in ("string", "date"):
            return KeyCodec(dtype)
        if dtype.startswith("decimal"):
            return KeyCodec("decimal")
        return KeyCodec("integer")

    def encode(self, value: exp.Expression) -> exp.Expression:
        """The SQL that turns a key value into its text."""
        if self.kind == "string":
            return exp.Hex(this=value)
        if self.kind == "date":
            value = exp.Anonymous(this="UNIX_DATE", expressions=[value])
        return exp.cast(value, exp.DataType.build("string"))

    def check(self, text: str) -> str:
        """The text itself, after proving it is what `encode` writes (never SQL to run)."""
        if self.kind == "string":
            ok = len(text) % 2 == 0 and all(c in "0123456789ABCDEFabcdef" for c in text)
        elif self.kind == "decimal":
            ok = _is_decimal(text)
        else:
            ok = text.removeprefix("-").isdigit()
        if not ok:
            raise ValueError(f"key pruning: unexpected {self.kind} key text {text[:40]!r}")
        return text

    def decode(self, text: str, dtype: str) -> exp.Expression:
        """The literal of the value `text` encodes, typed as the key column."""
        text = self.check(text)
        if self.kind == "string":
            unhex = exp.Unhex(this=exp.Literal.string(text))
            return exp.cast(unhex, exp.DataType.build("string"))
        if self.kind == "date":
            number = exp.Literal.number(int(text))
            return exp.Anonymous(this="DATE_FROM_UNIX_DATE", expressions=[number])
        return exp.cast(exp.Literal.string(text), exp.DataType.build(dtype, dialect="spark"))

    def ordinal(self, text: str) -> int | Decimal | None:
        """A number whose differences measure the gaps between keys (None: strings)."""
        if self.kind == "string":
            return None
        return Decimal(text) if self.kind == "decimal" else int(text)


def _is_decimal(text: str) -> bool:
    try:
        return Decimal(text).is_finite()
    except ArithmeticError:
        return False


def key_stats_sql(
    log: str, columns: Sequence[str], with_values: bool, dtypes: Mapping[str, str]
) -> str:
    """One pass over a log: per column its bounds and (`with_values`: for a log small enough
    to collect) its distinct values, each as `KeyCodec` text. NULLs are ignored, as by an
    equi-join."""
    parts: list[exp.Expression] = []
    for name in columns:
        codec = KeyCodec.of(dtypes.get(name, ""))
        parts += [codec.encode(exp.Min(this=col(name))), codec.encode(exp.Max(this=col(name)))]
        if with_values:
            parts.append(exp.ArrayUniqueAgg(this=codec.encode(col(name))))
    return sql(exp.Select().select(*parts).from_(table(log)))


def key_runs(
    values: Sequence[str], dtype: str, max_runs: int = MAX_RUNS
) -> tuple[tuple[str, str], ...] | None:
    """Split distinct key values into at most `max_runs` runs at their largest gaps.

    Only gaps wider than the narrowest one split (evenly spaced keys stay one run), so the
    runs cover as few keys that are not in the log as `max_runs` intervals can.
    None for types without a distance (strings) or no values.

    >>> key_runs(["1", "2", "3", "500", "501", "9000"], "bigint", 2)
    (('1', '501'), ('9000', '9000'))
    """
    codec = KeyCodec.of(dtype)
    if codec.kind == "string" or not values:
        return None
    keyed = sorted((codec.ordinal(v), v) for v in values)
    gaps = [(keyed[i + 1][0] - keyed[i][0], i) for i in range(len(keyed) - 1)]
    narrowest = min((g for g, _ in gaps), default=0)
    cuts = sorted(i for g, i in sorted(gaps, reverse=True)[: max(0, max_runs - 1)] if g > narrowest)
    runs: list[tuple[str, str]] = []
    start = 0
    for i in [*cuts, len(keyed) - 1]:
        runs.append((keyed[start][1], keyed[i][1]))
        start = i + 1
    return tuple(runs)


def parse_key_stats(
    row: Sequence, columns: Sequence[str], with_values: bool, dtypes: Mapping[str, str]
) -> dict[str, KeyRange]:
    """The KeyRange of each column from a `key_stats_sql` row (`dtypes`: the columns' Spark
    types, as given to `key_stats_sql`)."""
    width = 3 if with_values else 2
    out: dict[str, KeyRange] = {}
    for i, name in enumerate(columns):
        low, high = row[i * width], row[i * width + 1]
        values = runs = None
        if with_values:
            raw = row[i * width + 2] or []
            # A thrift connection returns arrays as JSON text.
            listed = [str(v) for v in (json.loads(raw) if isinstance(raw, str) else raw)]
            if len(listed) <= MAX_LISTED_KEYS:
                values = tuple(sorted(listed))
            else:
                runs = key_runs(listed, dtypes[name])
        out[name] = KeyRange(
            None if low is None else str(low), None if high is None else str(high), values, runs
        )
    return out


def exact_key_type(dtype: str) -> bool:
    """Does `KeyCodec` carry values of Spark type `dtype` into SQL exactly?

    >>> exact_key_type("decimal(12, 2)"), exact_key_type("double")
    (True, False)
    """
    return bool(_EXACT_TEXT_TYPE.match(dtype.lower()))


def key_filter(link: KeyLink, alias: str, key_range: KeyRange) -> exp.Expression:
    """The filter on the other input's column implied by the delta's keys."""
    return range_filter(col(link.other_column, alias), link.dtype, key_range)


def range_filter(column: exp.Expression, dtype: str, key_range: KeyRange) -> exp.Expression:
    """`column` (of Spark type `dtype`) within `key_range`: its bounds, and its values where
    listed or its runs where known; FALSE where the range holds no value.

    >>> print(sql(range_filter(col("k"), "bigint", KeyRange("3", "9", ("3", "9")))))
    `k` BETWEEN CAST('3' AS BIGINT) AND CAST('9' AS BIGINT) AND `k` IN (CAST('3' AS BIGINT), \
CAST('9' AS BIGINT))
    >>> print(sql(range_filter(col("k"), "int", KeyRange("1", "9", None, (("1", "2"), ("9", "9"))))))
    (`k` BETWEEN CAST('1' AS INT) AND CAST('2' AS INT) OR `k` BETWEEN CAST('9' AS INT) AND \
CAST('9' AS INT))
    """
    if key_range.low is None or key_range.high is None:
        return exp.false()
    codec = KeyCodec.of(dtype)

    def literal(text: str) -> exp.Expression:
        return codec.decode(text, dtype)

    def between(low: str, high: str) -> exp.Expression:
        return exp.Between(this=column.copy(), low=literal(low), high=literal(high))

    if key_range.values is None and key_range.runs and len(key_range.runs) > 1:
        return exp.paren(exp.or_(*(between(lo, hi) for lo, hi in key_range.runs)))
    node = between(key_range.low, key_range.high)
    if key_range.values is not None:
        node = exp.and_(node, column.copy().isin(*(literal(v) for v in key_range.values)))
    return node


def prune_terms(
    terms: Sequence[Term],
    query: Query,
    links: Sequence[KeyLink],
    ranges: Mapping[tuple[int, str], KeyRange],
) -> list[Term]:
    """Each term with the key filters of its delta input's links added."""
    out: list[Term] = []
    for term in terms:
        delta = term.delta_input
        extra = [
            key_filter(link, query.inputs[link.other].alias, ranges[(delta, link.delta_column)])
            for link in links
            if link.delta == delta
            and (delta, link.delta_column) in ranges
            and enforced(term, query, link.step)
        ]
        out.append(replace(term, filters=(*term.filters, *extra)) if extra else term)
    return out
