"""dbt-spark's functional adapter tests, session selection, on ``type: spark_ivm``.

The modules next to this file copy dbt-spark 1.11's ``tests/functional/adapter`` modules that
run anything under dbt-spark's ``spark_session`` profile: the same classes, subclassing the
same dbt-tests-adapter base classes, with dbt-spark's ``@pytest.mark.skip_profile(...)``
markers. A test whose marker names ``spark_session`` is skipped here, as in dbt-spark, unless a
comment at the class says why it runs (tests/README.md lists those).

dbt's ``project`` fixtures are imported below rather than named in ``pytest_plugins``: pytest
refuses ``pytest_plugins`` in a conftest that is not at the root of the run, and this one is
loaded late when the whole suite runs from ``tests/``.

Every class shares the one Spark of this pytest process (session mode is process-wide); each
class gets its own schema, dropped afterwards.

``SPARK_IVM_FUNCTIONAL_ADAPTER=spark`` runs the same tests on vanilla dbt-spark (``type:
spark``) with the plugin's Iceberg session settings, to tell a plugin bug from one of dbt-spark
on that catalog. Run it in its own pytest process: the Spark session outlives a test class.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbt.adapters.factory import reset_adapters

# The fixtures of dbt's functional test framework (project, adapter, unique_schema, ...).
from dbt.tests.fixtures.project import *

#: The dbt-spark test profile whose skips apply here (another name, e.g. ``none``, runs every
#: copied test, to see what dbt-spark's session skips hide).
PROFILE = os.environ.get("SPARK_IVM_FUNCTIONAL_PROFILE", "spark_session")

_ADAPTER_ENV = "SPARK_IVM_FUNCTIONAL_ADAPTER"


def pytest_configure(config: pytest.Config) -> None:
    """Register dbt-spark's marker."""
    config.addinivalue_line("markers", "skip_profile(profile): skip test for the given profile")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip tests marked ``skip_profile(..., "spark_session", ...)`` before any fixture runs.

    dbt-spark skips in an autouse fixture, which runs after the class-scoped ``project``
    fixture has already created a schema; marking at collection saves that work.
    """
    here = Path(__file__).parent
    for item in items:
        if here not in item.path.parents:
            continue
        for marker in item.iter_markers("skip_profile"):
            if PROFILE in marker.args:
                item.add_marker(pytest.mark.skip(reason=f"skipped on '{PROFILE}' profile"))
                break


@pytest.fixture(scope="session")
def spark_ivm_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ivm_home of the embedded Spark (warehouse, Derby metastore) for this process."""
    return tmp_path_factory.mktemp("spark_ivm_functional")


@pytest.fixture(scope="session")
def dbt_profile_target(spark_ivm_home: Path) -> dict[str, Any]:
    """dbt-spark's ``spark_session`` target, as ``type: spark_ivm`` (the schema is dbt's)."""
    if os.environ.get(_ADAPTER_ENV, "spark_ivm") == "spark":
        from ivm_harness.project import plain_spark_parameters

        return {
            "type": "spark",
            "host": "localhost",
            "method": "session",
            "server_side_parameters": plain_spark_parameters(spark_ivm_home),
        }
    return {
        "type": "spark_ivm",
        "host": "localhost",
        "method": "session",
        "ivm_home": str(spark_ivm_home),
    }


@pytest.fixture(scope="class", autouse=True)
def fresh_adapters() -> None:
    """Forget the adapters an earlier dbt invocation of this process left registered. dbt's
    `adapter` fixture registers its own only when none of its type is registered yet, so a
    leftover one (from a test whose thrift connection was refused, say) would serve this class
    with that test's profile. Autouse: it runs before the class's other fixtures."""
    reset_adapters()


@pytest.fixture(scope="class", autouse=True)
def artifacts_written() -> Iterator[None]:
    """dbt writes its JSON artifacts here: dbt's adapter tests read them (`test_empty` asserts
    that run_results.json exists), where the rest of the suite turns them off
    (`tests/conftest.py`)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DBT_WRITE_JSON", "true")
        yield


@pytest.fixture(scope="class")
def logs_dir(prefix: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """dbt's log folder of a test class, in a tmp dir (dbt's fixture writes into the repo)."""
    log_dir = tmp_path_factory.mktemp("logs") / prefix
    os.environ["DBT_LOG_PATH"] = str(log_dir)
    yield str(log_dir)
    os.environ.pop("DBT_LOG_PATH", None)
