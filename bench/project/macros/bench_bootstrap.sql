{#- First dbt invocation of a benchmark: starts the embedded Spark and creates the schemas. -#}
{% macro bench_bootstrap(schemas) %}
  {% for schema in schemas %}
    {% do run_query('create schema if not exists ' ~ schema) %}
  {% endfor %}
{% endmacro %}
