"""Checks shared by the adversarial tests: a relation against a fresh run of its SQL, in Spark.

The comparison runs in Spark (EXCEPT ALL both ways), so values Python cannot hold (dates
after year 9999, NaN keys) are compared exactly as Spark sees them; the failure message
shows the differing rows as JSON.
"""

from __future__ import annotations

from support.small_project import SmallProject


def bag_difference(p: SmallProject, relation: str, select: str, limit: int = 10) -> list[str]:
    """Rows (as JSON, prefixed 'missing'/'extra') where `relation` and `select` differ as bags."""
    rows = p.sql(
        f"SELECT 'missing' AS side, to_json(struct(*)) FROM ((({select}) EXCEPT ALL "
        f"SELECT * FROM {relation})) UNION ALL "
        f"SELECT 'extra', to_json(struct(*)) FROM ((SELECT * FROM {relation}) EXCEPT ALL "
        f"({select})) LIMIT {limit}"
    )
    return [f"{side} {row}" for side, row in rows]


def assert_equal_to_sql(p: SmallProject, relation: str, select: str, context: str) -> None:
    """The relation equals a fresh run of `select` as a bag; both are non-trivial to compare."""
    diff = bag_difference(p, relation, select)
    assert not diff, f"{context}: {relation} differs from its SQL:\n" + "\n".join(diff)


def run_messages(p: SmallProject, *args: str) -> dict[str, str]:
    """`dbt run` (args appended); fails the test when dbt fails; each model's log line."""
    result = p.dbt("run", *args)
    results = result.result.results if result.result else []
    messages = {r.node.name: str(r.message) for r in results}
    assert result.success, f"dbt run {' '.join(args)} failed: {messages} {result.exception}"
    return messages
