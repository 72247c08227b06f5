"""The harness can fail: `check_relation` on deliberately wrong relations, on the real Spark.

Uses the harness's SQL connection (no extra start-up) and temporary views only.
"""

from __future__ import annotations

import pytest
from ivm_harness.check import check_relation
from ivm_harness.runner import Harness

SQL = """
select k, count(*) as n, sum(x) as s, sum(d) as sd
from values ('a', 1.5D, 1.50BD), ('a', 0.1D, 2.25BD), (NULL, 0.2D, NULL), ('b', 3.0D, 1.00BD)
  as v(k, x, d)
group by k
"""


def _view(harness: Harness, name: str, body: str) -> str:
    harness.sql(f"CREATE OR REPLACE TEMPORARY VIEW {name} AS {body}")
    return name


def test_correct_relation_passes(harness: Harness) -> None:
    """A faithful copy (floats summed in another order) is equal."""
    view = _view(harness, "selfcheck_ok", f"select * from ({SQL}) order by k desc")
    result = check_relation(harness.conn, view, SQL)
    assert result.ok, result.problems


def test_wrong_rows_are_reported(harness: Harness) -> None:
    """A missing group, an extra row and a duplicated row all show up, with counts."""
    body = f"""
        select * from ({SQL}) where k <> 'b' or k is null
        union all select 'zz', 1L, 1.0D, cast(1 as decimal(20,2))
        union all select * from ({SQL}) where k = 'a'
    """
    result = check_relation(harness.conn, _view(harness, "selfcheck_rows", body), SQL)
    assert not result.ok
    text = "\n".join(result.problems)
    assert "MISSING from the relation" in text and "'b'" in text
    assert "EXTRA in the relation" in text and "'zz'" in text
    assert result.diff is not None
    assert [n for row, n in result.diff.extra if row[0] == "a"] == [1]


def test_float_difference_beyond_tolerance_is_reported(harness: Harness) -> None:
    """A double off by 1e-6 relative is a difference; NULL vs 0 is a difference."""
    body = f"""
        select k, n, case when k = 'a' then s * (1 + 1e-6) else s end as s,
               case when k is null then cast(0 as decimal(20,2)) else sd end as sd
        from ({SQL})
    """
    result = check_relation(harness.conn, _view(harness, "selfcheck_float", body), SQL)
    assert not result.ok
    assert result.diff is not None and len(result.diff.missing) == 2


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (f"select k, cast(n as int) as n, s, sd from ({SQL})", "relation type int"),
        (f"select n, k, s, sd from ({SQL})", "column names differ"),
        (f"select *, 1 as __ivm_count__ from ({SQL})", "hidden columns"),
    ],
    ids=["type", "order", "hidden"],
)
def test_schema_differences_are_reported(harness: Harness, body: str, expected: str) -> None:
    """Wrong Spark types, column order and visible `__ivm_` columns all fail."""
    result = check_relation(harness.conn, _view(harness, "selfcheck_schema", body), SQL)
    assert not result.ok
    assert any(expected in p for p in result.problems), result.problems
