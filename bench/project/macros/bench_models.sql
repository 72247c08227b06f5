{#-
  The four benchmark queries, each written once: models/ivm/<name>.sql (materialized ivm) and
  models/full/<name>_full.sql (materialized table) both call the same macro.
-#}

{#- TPC-H Q1 style: one table, grouped by two flags; sum, avg, count, min and max. -#}
{% macro bench_pricing_summary() %}
select
    l_returnflag,
    l_linestatus,
    sum(l_quantity) as sum_qty,
    sum(l_extendedprice) as sum_base_price,
    sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
    avg(l_quantity) as avg_qty,
    avg(l_discount) as avg_disc,
    count(*) as count_order,
    min(l_shipdate) as first_shipdate,
    max(l_extendedprice) as max_price
from {{ source('bench_src', 'lineitem') }}
where l_shipdate <= date '1998-09-02'
group by l_returnflag, l_linestatus
{% endmacro %}

{#- 3-way join aggregate with max: revenue per customer nation and order status. -#}
{% macro bench_nation_revenue() %}
select
    c.c_nationkey,
    o.o_orderstatus,
    count(*) as line_count,
    sum(l.l_extendedprice * (1 - l.l_discount)) as revenue,
    max(l.l_extendedprice) as max_price
from {{ source('bench_src', 'lineitem') }} l
join {{ source('bench_src', 'orders') }} o on l.l_orderkey = o.o_orderkey
join {{ source('bench_src', 'customers') }} c on o.o_custkey = c.c_custkey
group by c.c_nationkey, o.o_orderstatus
{% endmacro %}

{#- Left join aggregate: every customer, 0 orders for those without any (a third of them). -#}
{% macro bench_customer_orders() %}
select
    c.c_custkey,
    c.c_name,
    count(o.o_orderkey) as order_count,
    sum(o.o_totalprice) as total_price
from {{ source('bench_src', 'customers') }} c
left join {{ source('bench_src', 'orders') }} o on o.o_custkey = c.c_custkey
group by c.c_custkey, c.c_name
{% endmacro %}

{#- DISTINCT over a 3-way join. -#}
{% macro bench_nation_segments() %}
select distinct
    n.n_name,
    c.c_mktsegment,
    o.o_orderpriority
from {{ source('bench_src', 'orders') }} o
join {{ source('bench_src', 'customers') }} c on o.o_custkey = c.c_custkey
join {{ source('bench_src', 'nations') }} n on c.c_nationkey = n.n_nationkey
{% endmacro %}

{#- An ivm model over an ivm model: nation_revenue rolled up by order status. It reads its
    upstream's changes from the delta log `nation_revenue__ivm_dlog`; its table twin runs the
    same query over the same upstream. -#}
{% macro bench_status_revenue(upstream) %}
select
    o_orderstatus,
    count(*) as nations,
    sum(line_count) as line_count,
    sum(revenue) as revenue,
    max(max_price) as max_price
from {{ upstream }}
group by o_orderstatus
{% endmacro %}
