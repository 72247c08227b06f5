{#
  dbt run-operation ivm_explain --args '{model: revenue_by_nation}'
  dbt run-operation ivm_explain --args '{model: revenue_by_nation, sql: "select ..."}'

  Prints the ivm model's dataflow: its states and their sizes, each input's watermark, the
  operators and the rule that maintains each, its last runs and what the next would do
  (refresh or rebuild, with both estimates), the key pruning of delta terms, the auxiliary
  state (kept, possible, or why not), and the construct a refusal names. Read-only.
#}
{% macro ivm_explain(model, sql=none) %}
  {#- `model`: a model's name, or `name.vN` for one version of a versioned model (its name
      alone means its latest version); messages name a version as `name.vN`, as dbt run does -#}
  {%- set wanted = model | string -%}
  {%- set version = none -%}
  {%- set parts = wanted.rsplit('.v', 1) -%}
  {%- if parts | length == 2 and parts[1] -%}
    {%- set wanted, version = parts[0], parts[1] -%}
  {%- endif -%}
  {%- set found = [] -%}
  {%- for node in graph.nodes.values() -%}
    {%- if node.resource_type == 'model' and node.name == wanted -%}
      {%- if version is none and (node.version is none or node.version == node.latest_version) -%}
        {%- do found.append(node) -%}
      {%- elif version is not none and node.version | string == version -%}
        {%- do found.append(node) -%}
      {%- endif -%}
    {%- endif -%}
  {%- endfor -%}
  {%- if found | length == 0 -%}
    {{ exceptions.raise_compiler_error("ivm_explain: this project has no model named '" ~ model ~ "'") }}
  {%- endif -%}
  {%- set node = found[0] -%}
  {%- set name = node.name ~ ('.v' ~ node.version if node.version is not none else '') -%}
  {%- set lines = adapter.ivm_explain(
        name, node.schema, node.alias or node.name,
        node.config.get('ivm_aux_states'), sql, node.config.get('ivm_refresh')) -%}
  {%- for line in lines -%}
    {{ print(line) }}
  {%- endfor -%}
  {{ return(lines) }}
{% endmacro %}
