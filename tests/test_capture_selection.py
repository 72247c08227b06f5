"""Which conditions a base relation's change log is filtered by (pure: sqlglot only).

The differential harness and the TPC-H family check that filtered logs keep every refresh
equal to its SQL; these check which conditions are pushed and, as much, which are not."""

from __future__ import annotations

import pytest

from dbt.adapters.spark_ivm.compiler.capture.selection import pushed_filters
from dbt.adapters.spark_ivm.compiler.frontend.analyze import analyze

SCHEMAS = {
    "s.t": [("k", "int"), ("x", "int"), ("y", "string")],
    "s.u": [("k", "int"), ("z", "int")],
}


def filters(text: str) -> dict[str, str]:
    return {r: c.sql("spark") for r, c in pushed_filters(analyze(text, "m", SCHEMAS, "s")).items()}


def test_where_and_inner_on_conditions_of_one_input_filter_its_log():
    assert filters(
        "select t.k, sum(u.z) from t join u on t.k = u.k and u.z > 3 "
        "where t.x between 1 and 9 and t.y like 'a%' and t.x + u.z > 0 group by t.k"
    ) == {"s.t": "x BETWEEN 1 AND 9 AND y LIKE 'a%'", "s.u": "z > 3"}


def test_a_left_join_filters_its_right_input_by_its_on_only():
    """The padded side's WHERE conditions would turn padded rows into matched ones."""
    assert filters(
        "select t.k, u.z from t left join u on t.k = u.k and u.z > 3 "
        "where t.x > 0 and (u.z < 9 or u.z is null)"
    ) == {"s.t": "x > 0", "s.u": "z > 3"}


def test_a_left_join_whose_padded_rows_the_where_drops_filters_like_an_inner_join():
    """`u.z < 9` is never true on a padded row: the join is inner (`null_rejection.py`)."""
    assert filters(
        "select t.k, u.z from t left join u on t.k = u.k and u.z > 3 where t.x > 0 and u.z < 9"
    ) == {"s.t": "x > 0", "s.u": "z < 9 AND z > 3"}


@pytest.mark.parametrize("kind", ["right", "full"])
def test_inputs_padded_by_right_or_full_joins_are_not_filtered(kind: str):
    """t's rows are padded either way; `u.z > 0` drops the FULL JOIN's padding of u, which
    makes it a RIGHT JOIN (`null_rejection.py`), so u is filtered in both."""
    found = filters(f"select t.k, u.z from t {kind} join u on t.k = u.k and t.x > 1 where u.z > 0")
    assert "s.t" not in found
    assert "s.u" in found
    kept = filters(f"select t.k, u.z from t {kind} join u on t.k = u.k where u.z > 0 or t.x > 1")
    assert kept == {}


def test_a_self_join_keeps_rows_either_occurrence_sees():
    assert filters("select a.k from t a join t b on a.k = b.k where a.x > 5 and b.y = 'q'") == {
        "s.t": "x > 5 OR y = 'q'"
    }
    # one occurrence that sees every row: no filter
    assert filters("select a.k from t a join t b on a.k = b.k where a.x > 5") == {}


def test_branches_of_a_union_each_add_their_rows():
    assert filters(
        "select k from t where x > 1 union all select k from t where x < -1 "
        "union all select k from u"
    ) == {"s.t": "x > 1 OR x < -1"}


def test_conditions_dearer_than_the_pairing_they_save_are_not_pushed():
    """A LIKE that needs a regular expression per row (TPC-H Q13's `'%special%requests%'`)
    costs more on every rewritten row than pairing the few rows it would drop."""
    assert filters(
        "select t.k from t where t.y not like '%special%requests%' and t.y like 'PROMO%' "
        "and t.y rlike 'a.b'"
    ) == {"s.t": "y LIKE 'PROMO%'"}
