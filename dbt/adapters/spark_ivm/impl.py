"""The spark_ivm adapter: dbt-spark's adapter plus the ivm compiler's Jinja API."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from importlib import import_module
from typing import TYPE_CHECKING, Any, TypeAlias

from dbt.adapters.base import BaseRelation, available
from dbt.adapters.base.relation import AdapterTrackingRelationInfo
from dbt.adapters.contracts.relation import RelationConfig, RelationType
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.connections import SparkConnectionMethod
from dbt.adapters.spark.impl import LIST_RELATIONS_SHOW_TABLES_MACRO_NAME, SparkAdapter
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.spark_ivm import embedded
from dbt.adapters.spark_ivm.__version__ import version as plugin_version
from dbt.adapters.spark_ivm.connections import SparkIvmConnectionManager
from dbt.adapters.spark_ivm.jinja_api import IvmJinjaApi

if TYPE_CHECKING:
    import agate

logger = AdapterLogger("SparkIvm")

#: Prefix of the bookkeeping columns ivm models keep in their tables; not user data, so the
#: docs catalog does not list them.
HIDDEN_COLUMN_PREFIX = "__ivm_"
#: Set while a schema is listed: did dbt-spark fall back to `SHOW TABLES` (a named catalog)?
_LISTING = threading.local()

# With the Hive-backed Iceberg SparkSessionCatalog, `show table extended` / `describe
# extended` report `Provider: hive` for Iceberg tables; only the table property
# `table_type=ICEBERG` (which Iceberg's HiveCatalog always writes) tells them apart. The value
# must end there: Iceberg 1.10 also stores Spark views as Iceberg views, `table_type=ICEBERG-VIEW`.
_ICEBERG_TABLE_TYPE = re.compile(r"(?<![\w.])table_type=iceberg(?=[,\]\s]|$)", re.IGNORECASE)


def is_iceberg_information(information: str) -> bool:
    """True if relation information from SHOW TABLE EXTENDED / DESCRIBE describes Iceberg.

    Only the ``Table Properties:`` line is searched, so view text or comments that happen to
    contain ``table_type=ICEBERG`` do not count.
    """
    if "Provider: iceberg" in information:
        return True
    return any(
        line.startswith("Table Properties:") and _ICEBERG_TABLE_TYPE.search(line)
        for line in information.splitlines()
    )


class SparkIvmAdapter(IvmJinjaApi, SparkAdapter):
    """dbt-spark's adapter with Iceberg detection that works on the embedded Spark.

    The ``@available`` methods of :class:`IvmJinjaApi` are what the ivm macros call; see
    :func:`_expose_mixin_methods` for how they reach Jinja.
    """

    ConnectionManager: TypeAlias = SparkIvmConnectionManager

    @classmethod
    def get_adapter_run_info(cls, config: RelationConfig) -> AdapterTrackingRelationInfo:
        """Run metadata for dbt's tracking.

        The base implementation derives the module ``dbt.adapters.sparkivm`` from the class
        name and fails every model run with ModuleNotFoundError.
        """
        return AdapterTrackingRelationInfo(
            adapter_name="spark_ivm",
            base_adapter_version=import_module("dbt.adapters.__about__").version,
            adapter_version=plugin_version,
            model_adapter_details=cls._get_adapter_specific_run_info(config),
        )

    @classmethod
    def _get_adapter_specific_run_info(cls, config: RelationConfig) -> dict[str, Any]:
        """dbt-spark's details (table format), under this adapter's name."""
        details = dict(super()._get_adapter_specific_run_info(config))
        details["adapter_type"] = "spark_ivm"
        return details

    def _build_spark_relation_list(
        self,
        row_list: agate.Table,
        relation_info_func: Callable[[agate.Row], Any],
    ) -> list[BaseRelation]:
        """dbt-spark's relation list, with Iceberg tables recognised by their table property.

        dbt-spark only looks for ``Provider: iceberg``. Missing an Iceberg table makes its
        table materialization drop the table before ``create or replace`` (losing the
        snapshot history the ivm models read) and use Hive syntax for inserts.
        """
        relations = super()._build_spark_relation_list(row_list, relation_info_func)
        return [
            relation.incorporate(is_iceberg=True)
            if not getattr(relation, "is_iceberg", False)
            and is_iceberg_information(getattr(relation, "information", None) or "")
            else relation
            for relation in relations
        ]

    def list_relations_without_caching(self, schema_relation: BaseRelation) -> list[BaseRelation]:
        """dbt-spark's relations of a schema, with the views a named catalog holds.

        In a named Iceberg catalog (a `SparkCatalog` made the default with
        `spark.sql.defaultCatalog`) Spark 3.5 has no `SHOW TABLE EXTENDED`, and dbt-spark's
        fallback, `SHOW TABLES`, lists no view: an ivm model's view went missing from dbt's
        cache, so its next run took it for a first run and failed creating a view that
        exists. `SHOW VIEWS` adds them, only where dbt-spark fell back to `SHOW TABLES` (in
        the session catalog `SHOW TABLE EXTENDED` lists views: one statement less per schema
        and invocation)."""
        _LISTING.by_show_tables = False
        relations = super().list_relations_without_caching(schema_relation)
        if not _LISTING.by_show_tables:
            return relations
        known = {r.identifier.lower() for r in relations if r.identifier}
        try:
            rows = self.connections.execute(
                f"SHOW VIEWS IN {self.quote(schema_relation.schema)}", fetch=True
            )[1]
        except DbtRuntimeError:  # a schema that does not exist: listed as empty above
            return relations
        for row in rows:
            name, temporary = str(row[1]), bool(row[2])
            if not temporary and name.lower() not in known:
                relations.append(
                    self.Relation.create(
                        schema=schema_relation.schema, identifier=name, type=RelationType.View
                    )
                )
        return relations

    def execute_macro(self, macro_name: str, *args: Any, **kwargs: Any) -> Any:
        """dbt's, noting (per thread) when dbt-spark lists a schema by `SHOW TABLES`."""
        if macro_name == LIST_RELATIONS_SHOW_TABLES_MACRO_NAME:
            _LISTING.by_show_tables = True
        return super().execute_macro(macro_name, *args, **kwargs)

    @available
    def release_dropped_location(self, relation: BaseRelation) -> bool:
        """After a DROP: delete the relation's default folder if it holds no file.

        Iceberg's SparkSessionCatalog leaves empty folders behind when it drops an Iceberg view
        or purges an Iceberg table (see :func:`embedded.remove_empty_folder`), and a managed
        parquet table or seed of the same name then fails with LOCATION_ALREADY_EXISTS (e.g. a
        model switched from `view` to `table` or `incremental`). Removing a folder needs the
        file system, so this only acts with ``method: session``; with other methods, and when
        the folder has files, it does nothing. Returns True if it deleted a folder.
        """
        credentials = self.config.credentials
        if getattr(credentials, "method", None) != SparkConnectionMethod.SESSION:
            return False
        if not relation.schema or not relation.identifier:
            return False
        location = self._schema_location(relation.schema)
        if location is None:
            return False
        # Spark's default table path: the schema's folder plus the lower-cased table name.
        folder = f"{location.rstrip('/')}/{relation.identifier.lower()}"
        from py4j.protocol import Py4JError

        try:
            removed = embedded.remove_empty_folder(folder)
        except Py4JError as exc:  # never fail a DROP over debris
            logger.debug(f"spark_ivm: could not check {folder} after a DROP: {exc}")
            return False
        if removed:
            logger.debug(f"spark_ivm: removed the empty folder {folder} left by a DROP")
        return removed

    def _schema_location(self, schema: str) -> str | None:
        """The ``Location`` of ``DESCRIBE SCHEMA``, or None if Spark does not say.

        None too when the schema is gone (``drop ... if exists`` in a missing schema succeeds,
        and the clean-up after it must not turn that into an error).
        """
        try:
            _, table = self.execute(f"describe schema {self.quote(schema)}", fetch=True)
        except DbtRuntimeError as exc:
            logger.debug(f"spark_ivm: no location for schema {schema}: {exc}")
            return None
        for row in table.rows:
            if str(row[0]).strip().lower() == "location":
                return str(row[1]).strip() or None
        return None

    def _get_columns_for_catalog(self, relation: BaseRelation) -> Iterable[dict[str, Any]]:
        """Catalog columns without the ivm bookkeeping columns.

        Filtered here and not in ``get_columns_in_relation``: dbt-spark builds its merge and
        insert column lists from the latter, and those must include every column.
        """
        for column in super()._get_columns_for_catalog(relation):
            name = str(column.get("column_name") or "")
            if not name.lower().startswith(HIDDEN_COLUMN_PREFIX):
                yield column


def _expose_mixin_methods(adapter_cls: type) -> None:
    """Register the ``@available`` methods of plain mixins such as :class:`IvmJinjaApi`.

    dbt's AdapterMeta only collects ``@available`` methods from the class body and from the
    ``_available_`` sets of the direct bases; a mixin that is not itself built by AdapterMeta
    would be silently invisible to Jinja. Walk the whole MRO instead, honouring overrides
    (the most derived definition of a name decides).
    """
    namespace: dict[str, Any] = {}
    for klass in reversed(adapter_cls.__mro__):
        namespace.update(vars(klass))
    available = set(getattr(adapter_cls, "_available_", frozenset()))
    replacements = dict(getattr(adapter_cls, "_parse_replacements_", {}))
    for name, value in namespace.items():
        if getattr(value, "_is_available_", False):
            available.add(name)
        parse_replacement = getattr(value, "_parse_replacement_", None)
        if parse_replacement is not None:
            replacements[name] = parse_replacement
    adapter_cls._available_ = frozenset(available)  # type: ignore[attr-defined]
    adapter_cls._parse_replacements_ = replacements  # type: ignore[attr-defined]


_expose_mixin_methods(SparkIvmAdapter)
