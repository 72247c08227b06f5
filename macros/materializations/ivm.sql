{#
  The `ivm` materialization: incremental view maintenance.

  The first run builds the model's state table and the view over it; every later run applies
  only what changed in its Iceberg base tables since the previous run (inserts, updates and
  deletes), in one atomic MERGE. The compiler (dbt/adapters/spark_ivm/compiler) decides and
  renders everything; this file only orchestrates.
#}
{% materialization ivm, adapter='spark_ivm' %}
  {%- set existing = load_cached_relation(this) -%}
  {%- set target_relation = this.incorporate(type='view') -%}

  {{ run_hooks(pre_hooks) }}

  {#- the name messages use: dbt's, with the version of a versioned model (`orders.v2`) -#}
  {%- set model_name = model.get('name') or this.identifier -%}
  {%- if model.get('version') is not none -%}
    {%- set model_name = model_name ~ '.v' ~ model['version'] -%}
  {%- endif -%}

  {#- grants: a Spark without GRANT fails the model here, before anything is built -#}
  {%- set grant_config = config.get('grants') -%}
  {%- do adapter.ivm_check_grants(model_name, this.schema, this.identifier, grant_config) -%}

  {#- persist_docs: what it enables goes on the model's view (runtime/view.py) -#}
  {%- set docs = {} -%}
  {%- if config.persist_relation_docs() -%}
    {%- do docs.update({'comment': model.get('description')}) -%}
  {%- endif -%}
  {%- if config.persist_column_docs() -%}
    {%- do docs.update({'columns': model.get('columns')}) -%}
  {%- endif -%}

  {#- contract: dbt's check of the SQL's column names and types, as dbt-spark runs it for a
      view; constraints, which no view enforces, are warned about (contract.py) -#}
  {%- if config.get('contract').enforced -%}
    {{ get_assert_columns_equivalent(sql) }}
    {%- do adapter.ivm_check_contract(model_name, model.get('columns'), model.get('constraints')) -%}
  {%- endif -%}

  {%- if flags.EMPTY -%}
    {#- --empty: checked as the next run would plan it; an existing relation and its state
        left as they are, a new model's shape built without rows (runtime/empty.py) -#}
    {%- set result = adapter.ivm_empty(model_name, sql, this.schema, this.identifier,
          existing.type if existing is not none else none, config.get('ivm_aux_states'),
          config.get('ivm_unsupported')) -%}
  {%- else -%}
  {#- capture (pin snapshots, write change logs), delta, recompute and commit: one call -#}
  {%- set result = adapter.ivm_maintain(
        model_name,
        sql, this.schema, this.identifier,
        existing.type if existing is not none else none,
        should_full_refresh(),
        config.get('ivm_aux_states'),
        config.get('ivm_unsupported'),
        graph.nodes,
        model.get('unique_id'),
        config.get('ivm_refresh'),
        docs=docs,
        on_configuration_change=config.get('on_configuration_change'),
        layout={'tblproperties': config.get('tblproperties'),
                'partition_by': config.get('partition_by'),
                'location_root': config.get('location_root'),
                'include_full_name_in_path': config.get('include_full_name_in_path')}) -%}
  {%- endif -%}

  {%- if result['creates_view'] and existing is not none -%}
    {{ adapter.drop_relation(existing) }}
  {%- elif result['mode'] == 'empty' -%}
    {%- set target_relation = this.incorporate(type='table') -%}
  {%- elif result['mode'] == 'rebuild' -%}
    {#- ivm_unsupported='rebuild': a table written in full (CREATE OR REPLACE keeps the old
        one until the new one commits; a maintained model's view must make way for it) -#}
    {%- set target_relation = this.incorporate(type='table') -%}
    {%- if existing is not none and existing.type == 'view' -%}
      {{ adapter.drop_relation(existing) }}
    {%- endif -%}
  {%- endif -%}

  {#- none where the run keeps the view as it is (a refresh, no change): nothing to run -#}
  {%- if result['main_sql'] is not none -%}
    {% call statement('main') -%}
      {{ result['main_sql'] }}
    {%- endcall %}
  {%- endif -%}
  {#- adapter_response: the run's mode, reason and state rows (response.py) -#}
  {%- do store_result('main', response=result['response']) -%}

  {#- grants on the view: should_revoke for a re-created view asks copy_grants (dbt-spark:
      true but for `view` models), so dbt reads the grants in place before it changes any -#}
  {%- do apply_grants(target_relation, grant_config,
        should_revoke=should_revoke(existing, full_refresh_mode=result['creates_view'])) -%}

  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
