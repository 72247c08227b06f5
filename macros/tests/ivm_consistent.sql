{#
  data_tests: [ivm_consistent]
  Fails with the rows where an ivm relation and a fresh run of its SQL differ, compared as
  bags (floating point columns within a relative 1e-9). __ivm_side says which side has the row.
#}
{% test ivm_consistent(model) %}
  {{ adapter.ivm_consistency_sql(model.schema, model.identifier) }}
{% endtest %}
