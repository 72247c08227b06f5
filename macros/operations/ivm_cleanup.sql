{#
  dbt run-operation ivm_cleanup
  dbt run-operation ivm_cleanup --args '{dry_run: true}'

  Drops the companion relations (`<model>__ivm_*`: states, delta logs, sub-query and
  auxiliary states, snapshot-diff copies) of models that are no longer ivm models, in the
  schemas this project's models live in; a removed model's ivm view goes too. Prints each
  relation and why (compiler/runtime/cleanup.py). `dry_run: true` only prints.
#}
{% macro ivm_cleanup(dry_run=false) %}
  {%- set models = {} -%}
  {%- for node in graph.nodes.values() if node.resource_type == 'model' -%}
    {%- set schema = node.schema | lower -%}
    {%- if schema not in models -%}
      {%- do models.update({schema: {'ivm': [], 'other': []}}) -%}
    {%- endif -%}
    {%- set kind = 'ivm' if node.config.materialized == 'ivm' else 'other' -%}
    {%- do models[schema][kind].append(node.alias or node.name) -%}
  {%- endfor -%}
  {%- set lines = adapter.ivm_cleanup(models, dry_run) -%}
  {%- for line in lines -%}
    {{ print(line) }}
  {%- endfor -%}
  {{ return(lines) }}
{% endmacro %}
