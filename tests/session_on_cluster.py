"""`method: session` with `spark.master: spark://...`: one dbt project, run in a process of its
own (the test process already holds a local Spark, and a process has one driver).

Usage: python tests/session_on_cluster.py <master url> <master web port> <empty folder>

Creates two Iceberg base tables, builds an ivm model (join, aggregates with MIN/MAX), changes
both tables, refreshes it, runs its `ivm_consistent` test, compares the relation with a fresh
run of its SQL, and prints one JSON line: what each step said and which applications the
master gave executors to while this process ran. `test_thrift_cluster.py` asserts on it.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent)]

from ivm_harness.connection import SqlConnection
from support.own_process import SHOP_CHANGES, SHOP_TABLES, write_project

MODEL_SQL = """
select c.segment, count(*) as n, sum(o.amount) as total, min(o.amount) as smallest,
       max(o.amount) as biggest
from src.orders o
join src.customers c on o.cust = c.cid
group by c.segment
"""


def main(master: str, web_port: int, root: Path) -> dict:
    output = {
        "type": "spark_ivm",
        "method": "session",
        "host": "localhost",
        "schema": "on_cluster",
        "threads": 2,
        "ivm_home": str(root / ".spark_ivm"),
        "server_side_parameters": {
            "spark.master": master,
            "spark.cores.max": "1",
            "spark.executor.memory": "1g",
            "spark.driver.memory": "1g",
            "spark.app.name": "spark-ivm-session-on-cluster",
        },
    }
    dbt = write_project(root, "on_cluster", output, {"revenue": MODEL_SQL}, ["revenue"])

    conn = SqlConnection(output)  # opens the session: the driver starts here, on the cluster
    out: dict = {"master": conn.query("SET spark.master")[0][1]}
    for statement in SHOP_TABLES:
        conn.execute(statement)
    out["build"] = dbt("run")
    for statement in SHOP_CHANGES:
        conn.execute(statement)
    out["refresh"] = dbt("run")
    out["test"] = dbt("test")
    out["difference"] = conn.query(
        f"SELECT count(*) FROM ((SELECT * FROM on_cluster.revenue) EXCEPT ALL ({MODEL_SQL})) "
        f"UNION ALL SELECT count(*) FROM (({MODEL_SQL}) EXCEPT ALL "
        "(SELECT * FROM on_cluster.revenue))"
    )
    out["rows"] = conn.query("SELECT count(*) FROM on_cluster.revenue")[0][0]
    with urllib.request.urlopen(f"http://127.0.0.1:{web_port}/json/", timeout=5) as resp:
        state = json.load(resp)
    out["active_apps"] = [
        {"name": a.get("name"), "cores": a.get("cores")} for a in state.get("activeapps", [])
    ]
    conn.close()
    return out


if __name__ == "__main__":
    result = main(sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]))
    print("RESULT " + json.dumps(result, default=str))
