{{ config(materialized='ivm') }}
-- Mart over the intermediate ivm model: per region, how many customers ordered, their
-- orders and revenue, and the best customer's revenue. A change to orders flows
-- seed -> stg_orders (view) -> int_customer_revenue (ivm) -> here (ivm).
select
    n.region,
    count(*)       as customers,
    sum(i.orders)  as orders,
    sum(i.revenue) as revenue,
    max(i.revenue) as best_customer_revenue
from {{ ref('int_customer_revenue') }} i
left join {{ ref('nations') }} n on n.id = i.nation_id
group by n.region
