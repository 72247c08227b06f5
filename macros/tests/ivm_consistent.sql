{#
  data_tests: [ivm_consistent]
  Fails with the rows where an ivm relation and a fresh run of its SQL differ, compared as
  bags (floating point columns within a relative 1e-9). __ivm_side says which side has the row.
  Under `--empty` it compares no rows, as dbt's own tests read no rows of their refs there (an
  `--empty` run leaves an ivm model as it was, or builds its shape without a state).
#}
{% test ivm_consistent(model) %}
  {%- if flags.EMPTY -%}
    select 'relation' as __ivm_side where false
  {%- else -%}
    {{ adapter.ivm_consistency_sql(model.schema, model.identifier) }}
  {%- endif -%}
{% endtest %}
