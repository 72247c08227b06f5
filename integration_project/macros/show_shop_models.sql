{#
  dbt run-operation show_shop_models --args '{models: [revenue_by_nation, overall_totals]}'

  Prints each model's rows sorted by its first two columns (one dbt invocation for all models),
  values exactly as Spark returns them (numbers right-aligned); NULL prints as an empty cell.
#}
{% macro show_shop_models(models) %}
  {%- for m in models %}
    {%- set result = run_query("select * from " ~ ref(m) ~ " order by 1, 2") %}
    {%- set header = result.column_names | list %}
    {%- set lines = [] %}
    {%- set numeric = [] %}
    {%- for i in range(header | length) %}
      {%- set ns = namespace(num=true) %}
      {%- for row in result.rows %}{% if row[i] is not none and row[i] is not number %}{% set ns.num = false %}{% endif %}{% endfor %}
      {%- do numeric.append(ns.num) %}
    {%- endfor %}
    {%- for row in result.rows %}
      {%- set line = [] %}
      {%- for v in row.values() %}{% do line.append('' if v is none else v | string) %}{% endfor %}
      {%- do lines.append(line) %}
    {%- endfor %}
    {%- set widths = [] %}
    {%- for i in range(header | length) %}
      {%- set w = namespace(max=header[i] | length) %}
      {%- for line in lines %}{% set w.max = [w.max, line[i] | length] | max %}{% endfor %}
      {%- do widths.append(w.max) %}
    {%- endfor %}
    {%- set out = [] %}
    {%- for w in widths %}{% do out.append('-' * w) %}{% endfor %}
    {%- set out = ["| " ~ out | join(" | ") ~ " |"] %}
    {%- for line in lines %}
      {%- set padded = [] %}
      {%- for i in range(line | length) %}
        {%- do padded.append(line[i].rjust(widths[i]) if numeric[i] else line[i].ljust(widths[i])) %}
      {%- endfor %}
      {%- do out.append("| " ~ padded | join(" | ") ~ " |") %}
    {%- endfor %}
    {%- set titles = [] %}
    {%- for i in range(header | length) %}{% do titles.append(header[i].ljust(widths[i])) %}{% endfor %}
    {{ print("\n" ~ m ~ " (" ~ result.rows | length ~ " rows):\n  | " ~ titles | join(" | ") ~ " |\n  " ~ out | join("\n  ")) }}
  {%- endfor %}
{% endmacro %}
