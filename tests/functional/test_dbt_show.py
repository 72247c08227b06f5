"""dbt-spark's tests/functional/adapter/dbt_show/test_dbt_show.py."""

import pytest
from dbt.tests.adapter.dbt_show.test_dbt_show import (
    BaseShowDoesNotHandleDoubleLimit,
    BaseShowLimit,
    BaseShowSqlHeader,
)


class TestSparkShowLimit(BaseShowLimit):
    pass


class TestSparkShowSqlHeader(BaseShowSqlHeader):
    pass


# dbt-spark skips this class for "spark_session". It runs here and passes on the embedded
# Iceberg session.
@pytest.mark.skip_profile("apache_spark", "databricks_http_cluster")
class TestSparkShowDoesNotHandleDoubleLimit(BaseShowDoesNotHandleDoubleLimit):
    """The syntax message is quite variable across clusters, but this hits two at once."""

    DATABASE_ERROR_MESSAGE = "limit"
