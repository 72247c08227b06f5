{{ config(materialized='ivm') }}
-- Each customer's three biggest orders, ranked, with the customer's running revenue down
-- the ranking. The window sub-query is a state of its own; a change recomputes only the
-- customers it touches.
select customer_id, order_id, amount, rnk, running_revenue
from (
    select
        o.customer_id,
        o.order_id,
        o.amount,
        row_number() over (partition by o.customer_id
                           order by o.amount desc nulls last, o.order_id) as rnk,
        sum(o.amount) over (partition by o.customer_id
                            order by o.amount desc nulls last, o.order_id) as running_revenue
    from {{ ref('stg_orders') }} o
) ranked
where rnk <= 3
