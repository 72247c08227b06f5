{#
  dbt run-operation ivm_explain --args '{model: revenue_by_nation}'
  dbt run-operation ivm_explain --args '{model: revenue_by_nation, sql: "select ..."}'

  Prints the ivm model's dataflow: its states and their sizes, each input's watermark, the
  operators and the rule that maintains each, its last runs and what the next would do
  (refresh or rebuild, with both estimates), the key pruning of delta terms, the auxiliary
  state (kept, possible, or why not), and the construct a refusal names. Read-only.
#}
{% macro ivm_explain(model, sql=none) %}
  {%- set found = [] -%}
  {%- for node in graph.nodes.values() -%}
    {%- if node.resource_type == 'model' and node.name == model -%}
      {%- do found.append(node) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- if found | length == 0 -%}
    {{ exceptions.raise_compiler_error("ivm_explain: this project has no model named '" ~ model ~ "'") }}
  {%- endif -%}
  {%- set node = found[0] -%}
  {%- set lines = adapter.ivm_explain(
        node.name, node.schema, node.alias or node.name,
        node.config.get('ivm_aux_states'), sql, node.config.get('ivm_refresh')) -%}
  {%- for line in lines -%}
    {{ print(line) }}
  {%- endfor -%}
  {{ return(lines) }}
{% endmacro %}
