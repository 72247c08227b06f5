{#
  dbt run-operation change_shop_data --args '{round: 2}'

  Changes the seed tables (the ivm models' Iceberg base tables) with INSERTs, UPDATEs and
  DELETEs on orders, customers and nations. Deterministic: what changes depends only on `round`
  (rounds 1, 2, 3, ... each touch different rows; ids of new rows are unique per round).
#}
{% macro change_shop_data(round=1) %}
  {%- set r = round | int -%}
  {%- set orders = ref('orders') -%}
  {%- set customers = ref('customers') -%}
  {%- set nations = ref('nations') -%}
  {%- set new_nation = ['Norway', 'Australia', 'India', 'Mexico'][r % 4] -%}
  {%- set new_date = modules.datetime.date(2024, 3, 7) + modules.datetime.timedelta(days=r) -%}

  {%- set changes = [
    ("nations: INSERT nation " ~ (10 + r) ~ " '" ~ new_nation ~ "'",
     "insert into " ~ nations ~ " values (" ~ (10 + r) ~ ", '" ~ new_nation ~ "', 'Elsewhere')"),
    ("nations: UPDATE nation " ~ r ~ " name to upper case",
     "update " ~ nations ~ " set name = upper(name) where id = " ~ r),
    ("nations: DELETE nation " ~ (8 - r) ~ " (its customers lose their nation)",
     "delete from " ~ nations ~ " where id = " ~ (8 - r)),

    ("customers: INSERT customer " ~ (100 + r) ~ " in the new nation, customer " ~ (200 + r) ~ " without nation",
     "insert into " ~ customers ~ " values (" ~ (100 + r) ~ ", 'New Customer " ~ r ~ "', " ~ (10 + r) ~ ", 'retail'), ("
       ~ (200 + r) ~ ", 'Walk-in " ~ r ~ "', null, null)"),
    ("customers: UPDATE customer " ~ (5 + r) ~ " nation -> 6 (Kenya), customer " ~ (2 * r) ~ " nation -> NULL",
     "update " ~ customers ~ " set nation_id = case when id = " ~ (5 + r) ~ " then 6 else null end"
       ~ " where id in (" ~ (5 + r) ~ ", " ~ (2 * r) ~ ")"),
    ("customers: DELETE customer " ~ (16 + r) ~ " (its orders become orphans)",
     "delete from " ~ customers ~ " where id = " ~ (16 + r)),

    ("orders: INSERT 4 orders " ~ (100 * r + 1) ~ ".." ~ (100 * r + 4) ~ " (new date " ~ new_date ~ ", a NULL amount, a customer that had no order)",
     "insert into " ~ orders ~ " values "
       ~ "(" ~ (100 * r + 1) ~ ", " ~ (100 + r) ~ ", date'" ~ new_date ~ "', 77.70, 'shipped'), "
       ~ "(" ~ (100 * r + 2) ~ ", " ~ (200 + r) ~ ", date'" ~ new_date ~ "', null, 'shipped'), "
       ~ "(" ~ (100 * r + 3) ~ ", " ~ (8 + 2 * r) ~ ", date'2024-03-0" ~ r ~ "', 2000.00, 'shipped'), "
       ~ "(" ~ (100 * r + 4) ~ ", 1, date'2024-03-05', 35.00, null)"),
    ("orders: UPDATE order " ~ (r + 2) ~ " amount +" ~ (10 * r) ~ ", order " ~ (5 + r) ~ " cancelled, order " ~ (12 + r) ~ " moved to customer 18",
     "update " ~ orders ~ " set"
       ~ " amount = case when id = " ~ (r + 2) ~ " then amount + " ~ (10 * r) ~ " else amount end,"
       ~ " status = case when id = " ~ (5 + r) ~ " then 'cancelled' else status end,"
       ~ " customer_id = case when id = " ~ (12 + r) ~ " then 18 else customer_id end"
       ~ " where id in (" ~ (r + 2) ~ ", " ~ (5 + r) ~ ", " ~ (12 + r) ~ ")"),
    ("orders: DELETE orders " ~ (3 * r) ~ " and " ~ (20 + r) ~ " (" ~ (3 * r) ~ " is the biggest order of its day)",
     "delete from " ~ orders ~ " where id in (" ~ (3 * r) ~ ", " ~ (20 + r) ~ ")"),
  ] -%}

  {{ log("change_shop_data round " ~ r ~ ":", info=True) }}
  {%- for description, sql in changes %}
    {%- do run_query(sql) %}
    {{ log("  " ~ description, info=True) }}
  {%- endfor %}
  {%- for rel in [nations, customers, orders] %}
    {%- set n = run_query("select count(*) from " ~ rel).columns[0].values()[0] %}
    {{ log("  " ~ rel ~ " now has " ~ n ~ " rows", info=True) }}
  {%- endfor %}
{% endmacro %}
