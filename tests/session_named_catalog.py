"""`method: session` with a named Iceberg catalog as the default one: a dbt project run in a
process of its own (the test process's Spark has the session catalog, and a process has one
Spark).

Usage: python tests/session_named_catalog.py <empty folder>

The profile registers `lake` (`org.apache.iceberg.spark.SparkCatalog`, type hive, on the
embedded Derby metastore) and makes it the default (`spark.sql.defaultCatalog`), and a Hadoop
catalog `files` (no server: a folder). Creates two Iceberg base tables in `lake` and one,
merge-on-read, in `files`; builds an ivm model that names one of `lake`'s tables with its
catalog (`lake.src.orders`) and the other without, and a second model that reads three
catalogs at once (the current one, `spark_catalog` and `files`, through an inner and a LEFT
join, with a MIN); changes every table, refreshes both, runs them again with nothing new, runs
their `ivm_consistent` tests, compares each relation with a fresh run of its SQL, and lists
where their relations live. Prints one JSON line for `test_named_catalog.py`.
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
ELSEWHERE_SQL = """
select r.region, c.segment, count(*) as n, sum(o.amount) as total, min(o.amount) as least
from src.orders o
join spark_catalog.src.customers c on o.cust = c.cid
left join files.raw.regions r on r.cid = o.cust
group by r.region, c.segment
"""
#: The table of the Hadoop catalog, merge-on-read (its changes are position delete files).
FILES_TABLES = (
    "CREATE NAMESPACE IF NOT EXISTS files.raw",
    (
        "CREATE TABLE files.raw.regions (cid int, region string) USING iceberg TBLPROPERTIES "
        "('format-version' = '2', 'write.delete.mode' = 'merge-on-read', "
        "'write.update.mode' = 'merge-on-read', 'write.merge.mode' = 'merge-on-read')"
    ),
    "INSERT INTO files.raw.regions VALUES (1, 'north'), (2, 'south'), (2, 'east')",
)
FILES_CHANGES = (
    "UPDATE files.raw.regions SET region = 'west' WHERE cid = 1",
    "DELETE FROM files.raw.regions WHERE region = 'east'",
    "INSERT INTO files.raw.regions VALUES (4, 'north'), (3, NULL)",
)


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
            "spark.sql.catalog.files": "org.apache.iceberg.spark.SparkCatalog",
            "spark.sql.catalog.files.type": "hadoop",
            "spark.sql.catalog.files.warehouse": str(root / "files"),
        },
    }
    models = {"revenue": MODEL_SQL, "elsewhere": ELSEWHERE_SQL}
    dbt = write_project(root, "in_lake", output, models, list(models))

    conn = SqlConnection(output)
    out: dict = {"catalog": conn.query("SELECT current_catalog()")[0][0]}
    for statement in (*SHOP_TABLES, *FILES_TABLES):
        conn.execute(statement)
    for name in models:
        out[name] = {"build": dbt("run", "--select", name)}
    for statement in (*SHOP_CHANGES, *FILES_CHANGES):
        conn.execute(statement)
    for name, select in models.items():
        out[name]["refresh"] = dbt("run", "--select", name)
        out[name]["again"] = dbt("run", "--select", name)
        out[name]["test"] = dbt("test", "--select", name)
        out[name]["difference"] = conn.query(
            f"SELECT count(*) FROM ((SELECT * FROM in_lake.{name}) EXCEPT ALL ({select})) "
            f"UNION ALL SELECT count(*) FROM (({select}) EXCEPT ALL "
            f"(SELECT * FROM in_lake.{name}))"
        )
    out["views"] = [r[1] for r in conn.query("SHOW VIEWS IN lake.in_lake")]
    out["tables"] = [r[1] for r in conn.query("SHOW TABLES IN lake.in_lake")]
    conn.close()
    return out


if __name__ == "__main__":
    result = main(Path(sys.argv[1]))
    print("RESULT " + json.dumps(result, default=str))
