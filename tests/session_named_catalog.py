"""`method: session` with a named Iceberg catalog as the default one: a dbt project run in a
process of its own (the test process's Spark has the session catalog, and a process has one
Spark).

Usage: python tests/session_named_catalog.py <empty folder>

The profile registers `lake` (`org.apache.iceberg.spark.SparkCatalog`, type hive, on the
embedded Derby metastore) and makes it the default (`spark.sql.defaultCatalog`). Creates two
Iceberg base tables in `lake`, builds an ivm model that names one of them with its catalog
(`lake.src.orders`) and the other without, changes both, refreshes it, runs it again with
nothing new, runs its `ivm_consistent` test, compares the relation with a fresh run of its
SQL, and lists where its relations live; a second model that names a table of another catalog
(`spark_catalog.src.customers`) must be refused. Prints one JSON line for
`test_named_catalog.py`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent)]

from ivm_harness.connection import SqlConnection
from support.own_process import SHOP_CHANGES, SHOP_TABLES, write_project

MODEL_SQL = """
select c.segment, count(*) as n, sum(o.amount) as total, max(o.amount) as biggest
from lake.src.orders o
join src.customers c on o.cust = c.cid
group by c.segment
"""
ELSEWHERE_SQL = "select segment, count(*) as n from spark_catalog.src.customers group by segment"


def main(root: Path) -> dict:
    os.environ["DBT_SPARK_IVM_REFRESH"] = "incremental"  # every refresh runs the rules
    output = {
        "type": "spark_ivm",
        "method": "session",
        "host": "localhost",
        "schema": "in_lake",
        "threads": 2,
        "ivm_home": str(root / ".spark_ivm"),
        "server_side_parameters": {
            "spark.master": "local[1]",
            "spark.driver.memory": "1g",
            "spark.sql.catalog.lake": "org.apache.iceberg.spark.SparkCatalog",
            "spark.sql.catalog.lake.type": "hive",
            "spark.sql.defaultCatalog": "lake",
        },
    }
    dbt = write_project(root, "in_lake", output, {"revenue": MODEL_SQL}, ["revenue"])

    conn = SqlConnection(output)
    out: dict = {"catalog": conn.query("SELECT current_catalog()")[0][0]}
    for statement in SHOP_TABLES:
        conn.execute(statement)
    out["build"] = dbt("run", "--select", "revenue")
    for statement in SHOP_CHANGES:
        conn.execute(statement)
    out["refresh"] = dbt("run", "--select", "revenue")
    out["again"] = dbt("run", "--select", "revenue")
    out["test"] = dbt("test", "--select", "revenue")
    out["difference"] = conn.query(
        f"SELECT count(*) FROM ((SELECT * FROM in_lake.revenue) EXCEPT ALL ({MODEL_SQL})) "
        f"UNION ALL SELECT count(*) FROM (({MODEL_SQL}) EXCEPT ALL "
        "(SELECT * FROM in_lake.revenue))"
    )
    out["views"] = [r[1] for r in conn.query("SHOW VIEWS IN lake.in_lake")]
    out["tables"] = [r[1] for r in conn.query("SHOW TABLES IN lake.in_lake")]
    (root / "models" / "elsewhere.sql").write_text(
        "{{ config(materialized='ivm') }}\n" + ELSEWHERE_SQL
    )  # written after the first runs: it fails, and only its own run should
    out["elsewhere"] = dbt("run", "--select", "elsewhere")
    out["tables_after"] = [r[1] for r in conn.query("SHOW TABLES IN lake.in_lake")]
    conn.close()
    return out


if __name__ == "__main__":
    result = main(Path(sys.argv[1]))
    print("RESULT " + json.dumps(result, default=str))
