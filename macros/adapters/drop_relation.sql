{#
  Iceberg's SparkSessionCatalog (the embedded default's `spark_catalog`) drops a non-Iceberg
  table (parquet, hive, ...) from the metastore only: Iceberg's HiveCatalog drops it "without
  deleting data" (apache/iceberg#12790), so its folder stays, and building the table again
  (a `table` model or seed in the default file format, on its second run) fails with
  LOCATION_ALREADY_EXISTS after dbt-spark has already dropped the old relation.

  `DROP TABLE ... PURGE` takes the other path: Iceberg finds no Iceberg table to purge and
  hands the drop to Spark's own session catalog, which deletes the table's folder (partition
  folders included). Plain SQL, so it works the same over `method: thrift`; on a catalog
  without Iceberg it means what it always means for a managed table (delete the data, skip
  any trash).

  A view is an Iceberg view there, and dropping one leaves its empty `metadata/` folder at the
  path a table of that name would get: the same error when a `view` model becomes a `table`,
  `incremental` or seed. No SQL removes a folder, so `adapter.release_dropped_location` deletes
  it through the embedded session's file system (method: session only; only a folder without
  files).

  Iceberg tables keep dbt-spark's plain DROP (their files stay, as before). A relation that is
  not known to be Iceberg (dbt-spark's table materialization drops a fresh relation object
  that carries no table information) is looked up in dbt's relation cache first; one that is
  not there is purged.
#}
{% macro spark_ivm__drop_relation(relation) -%}
  {%- set purge = relation.type == 'table' and not relation.is_iceberg -%}
  {%- if purge and execute -%}
    {%- set cached = adapter.get_relation(relation.database, relation.schema, relation.identifier) -%}
    {%- if cached is not none and (cached.is_iceberg or cached.type != 'table') -%}
      {%- set purge = false -%}
    {%- endif -%}
  {%- endif -%}
  {% call statement('drop_relation', auto_begin=False) -%}
    drop {{ relation.type }} if exists {{ relation }}{% if purge %} purge{% endif %}
  {%- endcall %}
  {%- if relation.type == 'view' -%}
    {%- do adapter.release_dropped_location(relation) -%}
  {%- endif -%}
{%- endmacro %}
