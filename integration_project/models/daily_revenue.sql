{{ config(materialized='ivm') }}
-- Per order date: number of orders, revenue (cancelled orders excluded), the biggest order.
select
    order_date,
    count(*)    as orders,
    sum(amount) as revenue,
    max(amount) as biggest_order
from {{ ref('orders') }}
where status is null or status <> 'cancelled'
group by order_date
