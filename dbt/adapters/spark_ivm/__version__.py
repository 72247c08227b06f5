"""Version of the dbt-spark-ivm adapter plugin (dbt reads ``version`` from this module)."""

version = "0.1.0"
