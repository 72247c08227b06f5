{{ config(materialized='ivm') }}
-- Per customer: how many orders, how much they spent, the average order.
-- Orders without a customer (customer_id NULL) form their own group.
select
    customer_id,
    count(*)      as order_count,
    count(amount) as priced_orders,
    sum(amount)   as total_amount,
    avg(amount)   as avg_amount
from {{ ref('orders') }}
group by customer_id
