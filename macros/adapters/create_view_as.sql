{#
  With Iceberg's Hive-backed SparkSessionCatalog (the embedded default), CREATE VIEW makes an
  Iceberg view, and CREATE OR REPLACE VIEW then updates its properties but keeps the old view
  text: a changed `view` model would silently keep its old SQL. Drop an existing view first,
  then create it; dbt-spark's statement does the rest.
#}
{% macro spark_ivm__create_view_as(relation, sql) -%}
  {%- if execute -%}
    {%- set existing = adapter.get_relation(relation.database, relation.schema, relation.identifier) -%}
    {%- if existing is not none and existing.is_view -%}
      {%- do adapter.drop_relation(existing) -%}
    {%- endif -%}
  {%- endif -%}
  {{ spark__create_view_as(relation, sql) }}
{%- endmacro %}
