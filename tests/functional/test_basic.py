"""dbt-spark's tests/functional/adapter/test_basic.py."""

import pytest
from dbt.tests.adapter.basic.test_adapter_methods import BaseAdapterMethod
from dbt.tests.adapter.basic.test_base import BaseSimpleMaterializations
from dbt.tests.adapter.basic.test_empty import BaseEmpty
from dbt.tests.adapter.basic.test_ephemeral import BaseEphemeral
from dbt.tests.adapter.basic.test_generic_tests import BaseGenericTests
from dbt.tests.adapter.basic.test_incremental import BaseIncremental
from dbt.tests.adapter.basic.test_singular_tests import BaseSingularTests
from dbt.tests.adapter.basic.test_singular_tests_ephemeral import BaseSingularTestsEphemeral


# dbt-spark skips this class for "spark_session". It runs here: a table model and a seed in
# the default format (parquet) built twice is what Iceberg's SparkSessionCatalog broke
# (LOCATION_ALREADY_EXISTS, apache/iceberg#12790), and vanilla dbt-spark passes it.
class TestSimpleMaterializationsSpark(BaseSimpleMaterializations):
    pass


class TestSingularTestsSpark(BaseSingularTests):
    pass


@pytest.mark.skip_profile("apache_spark")
class TestSingularTestsEphemeralSpark(BaseSingularTestsEphemeral):
    pass


class TestEmptySpark(BaseEmpty):
    pass


# dbt-spark skips the three classes below for "spark_session"; they run here and pass on the
# embedded Iceberg session.
class TestEphemeralSpark(BaseEphemeral):
    pass


class TestIncrementalSpark(BaseIncremental):
    pass


class TestGenericTestsSpark(BaseGenericTests):
    pass


class TestBaseAdapterMethod(BaseAdapterMethod):
    pass
