"""Packaging of the dbt-spark-ivm adapter plugin (dbt adapter type ``spark_ivm``).

The Jinja lives once, in the repository's top-level ``macros/`` folder. From a clone or an
editable install dbt reads it there (``dbt/include/spark_ivm/dbt_project.yml`` names it as
``../../../macros``); a wheel gets a copy in ``dbt/include/spark_ivm/macros/`` and a
``dbt_project.yml`` that names that copy (``BuildPyWithMacros``).
"""

import shutil
from pathlib import Path

from setuptools import find_namespace_packages, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
PACKAGE = Path("dbt", "include", "spark_ivm")
#: The line of dbt_project.yml that names the macros folder: as in the repository, as in a wheel.
SOURCE_MACRO_PATHS = 'macro-paths: ["../../../macros"]'
WHEEL_MACRO_PATHS = 'macro-paths: ["macros"]'


class BuildPyWithMacros(build_py):
    """build_py that puts macros/ into the package and points dbt_project.yml at it.

    Not in editable mode: there the package stays in the repository and dbt reads macros/
    where it is, so an edited macro needs no reinstall.
    """

    def run(self):
        super().run()
        if self.editable_mode:
            return
        target = Path(self.build_lib, PACKAGE)
        shutil.rmtree(target / "macros", ignore_errors=True)  # a macro deleted since last build
        shutil.copytree(
            ROOT / "macros",
            target / "macros",
            ignore=lambda folder, names: [
                n for n in names if not (n.endswith(".sql") or Path(folder, n).is_dir())
            ],
        )
        # Written from the source each time: build_py skips copying a file older than its copy.
        text = (ROOT / PACKAGE / "dbt_project.yml").read_text()
        if text.count(SOURCE_MACRO_PATHS) != 1:
            raise RuntimeError(f"{PACKAGE}/dbt_project.yml lacks the line {SOURCE_MACRO_PATHS}")
        (target / "dbt_project.yml").write_text(text.replace(SOURCE_MACRO_PATHS, WHEEL_MACRO_PATHS))


setup(
    name="dbt-spark-ivm",
    version="0.1.0",
    description=(
        "dbt adapter plugin on dbt-spark with an `ivm` (incremental view maintenance) "
        "materialization on Apache Iceberg and an embedded local Spark"
    ),
    license="Apache-2.0",
    # 3.13: snowpark-connect-deps-iceberg (the Iceberg jar, below) declares Requires-Python <3.13
    # in every release, so pip finds none and it is installed in a step of its own
    # (README; docs/reference.md, *Versions*).
    python_requires=">=3.11,<3.14",
    # Namespace packages only: dbt-core and dbt-adapters own dbt/__init__.py and
    # dbt/adapters/__init__.py, and shipping them here would clobber theirs.
    packages=find_namespace_packages(include=["dbt.*"], exclude=["*.__pycache__"]),
    package_data={
        "dbt.include.spark_ivm": [
            "dbt_project.yml",
            "profile_template.yml",
            "sample_profiles.yml",
        ],
    },
    cmdclass={"build_py": BuildPyWithMacros},
    install_requires=[
        # dbt-core 1.12.1+ needs dbt-core-experimental-parser>=2.0.0b1, on PyPI only a source
        # archive whose build downloads its binary from GitHub; 1.12.0 installs only with the
        # parser's alpha 2.0.0a4 pinned (docs/reference.md, *Versions*).
        "dbt-core>=1.10,<1.12",
        "dbt-spark[session,PyHive]==1.11.0",
        # The Iceberg runtime jar below is built for Spark 3.5 / Scala 2.12; dbt-spark alone
        # would let pip take pyspark 4.
        "pyspark==3.5.*",
        # Ships iceberg-spark-runtime-3.5_2.12-1.10.2.jar; 1.0.3's jar lacks Iceberg's
        # shaded Jackson classes and every CREATE TABLE fails. A plain jar in a wheel that
        # says Python <3.13: on 3.13, `pip install --no-deps --ignore-requires-python` it.
        "snowpark-connect-deps-iceberg==1.0.2; python_version < '3.13'",
        "sqlglot>=30,<31",
    ],
    extras_require={
        # bench/ (python -m bench.run): progress bars and plots
        # bench/tpch.py: TPC-H's data (dbgen) and queries come from DuckDB's tpch extension
        "bench": ["matplotlib", "tqdm", "duckdb", "duckdb-extension-tpch"],
        # the test suite runs a tiny benchmark (tests/test_bench.py)
        # tests/functional: dbt-spark's functional adapter tests (session selection)
        # pytest-xdist: the suite runs in two processes (pytest.ini)
        "test": [
            "pytest",
            "pytest-xdist",
            "ruff",
            "matplotlib",
            "tqdm",
            "dbt-tests-adapter==1.20.0",
            # tests/test_tpch.py: TPC-H's data and queries (bench/tpch.py)
            "duckdb",
            "duckdb-extension-tpch",
        ],
    },
    zip_safe=False,
    classifiers=[
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3.11",
        "Programming Language :: Python :: 3.12",
        "Programming Language :: Python :: 3.13",
    ],
)
