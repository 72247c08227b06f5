"""java_classes: the Java classes the plugin calls through py4j, reached by their full name.

py4j resolves `jvm.org.apache.iceberg.ManifestFiles` one dotted part at a time, one round trip
each, and for every part the JVM tries to load a class of that name (the first part also
under each package the gateway imports, as a short name such as `PythonUtils` is): a class
that does not exist is looked for in every jar of the class path (about 250 in pyspark's
install), and the JVM caches no miss. pyspark pays such lookups on each statement, column
function and error it converts (`PYSPARK_SHORT_NAMES`, `PYSPARK_WALKED_CLASSES`). JFR samples
of the test harness: 5.7-6.6 % of the driver JVM's CPU in jar lookups, 3.6 % once these are
pinned (2026-12-03). A `JavaClass` built from its full name costs none of that: its static
members are looked up on the loaded class.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: The classes pyspark looks up by their short name on every statement (`SparkSession.sql`,
#: a list of columns, `SparkSession.builder.getOrCreate` of a running session) and every
#: column function (`functions.expr`), by that name.
PYSPARK_SHORT_NAMES = {
    "PythonUtils": "org.apache.spark.api.python.PythonUtils",
    "functions": "org.apache.spark.sql.functions",
    "SparkSession$": "org.apache.spark.sql.SparkSession$",
}
#: Classes pyspark and py4j reach by walking packages from the view: each Spark error is
#: described through `jvm.org.apache.spark.util.Utils` after up to twelve type tests through
#: `jvm.py4j.reflection.TypeUtil`. The top-level name is short, so looked up under every
#: imported package too.
PYSPARK_WALKED_CLASSES = ("org.apache.spark.util.Utils", "py4j.reflection.TypeUtil")


def java_class(spark: Any, name: str) -> Any:
    """The Java class `name` (fully qualified) of `spark`'s JVM, with no lookup on the way."""
    from py4j.java_gateway import JavaClass

    return JavaClass(name, spark._jvm._gateway_client)


def string_array(spark: Any, values: Sequence[str]) -> Any:
    """A Java `String[]` of `values` in `spark`'s JVM (what Iceberg's `select` and Spark's
    `Identifier.of` take)."""
    array = spark.sparkContext._gateway.new_array(
        java_class(spark, "java.lang.String"), len(values)
    )
    for i, value in enumerate(values):
        array[i] = value
    return array


def pin_pyspark_lookups(spark: Any) -> None:
    """Give the session's JVM view the classes and packages pyspark looks up by short name on
    each statement, so that `jvm.PythonUtils` is an attribute of the view rather than a lookup
    in the JVM.

    py4j's view answers unknown attributes through `__getattr__`, which is not consulted for
    an attribute the view holds; what is pinned is what the lookup would find.
    """
    view = spark._jvm
    for short, name in PYSPARK_SHORT_NAMES.items():
        if short not in vars(view):
            setattr(view, short, java_class(spark, name))
    for name in PYSPARK_WALKED_CLASSES:
        _pin_path(spark, name)


def _pin_path(spark: Any, name: str) -> None:
    """Hold each package of the class `name` as an attribute of its parent (the view for the
    first), and the class as one of the last, keeping what is pinned already."""
    from py4j.java_gateway import JavaPackage

    view = spark._jvm
    parts = name.split(".")
    holder = view
    for depth, part in enumerate(parts):
        found = vars(holder).get(part)
        if found is None:
            if depth == len(parts) - 1:
                found = java_class(spark, name)
            else:
                package = ".".join(parts[: depth + 1])
                found = JavaPackage(package, view._gateway_client, jvm_id=view._id)
            setattr(holder, part, found)
        holder = found
