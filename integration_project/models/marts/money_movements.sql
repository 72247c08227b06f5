{{ config(materialized='ivm') }}
-- One feed of money movements: each order's amount, and a cancelled order as a refund
-- (a negative amount) next to it. UNION ALL of two branches over the staging view.
select customer_id, order_id, amount as money, 'order' as kind
from {{ ref('stg_orders') }}
union all
select customer_id, order_id, -amount, 'refund'
from {{ ref('stg_orders') }}
where status = 'cancelled'
