{{ config(materialized='ivm') }}
-- Intermediate ivm model over the two staging views: per customer (and its nation), the
-- orders that were not cancelled and their revenue. Orders without a known customer keep
-- a NULL nation (LEFT JOIN).
select
    o.customer_id,
    c.nation_id,
    count(*)      as orders,
    sum(o.amount) as revenue
from {{ ref('stg_orders') }} o
left join {{ ref('stg_customers') }} c on c.customer_id = o.customer_id
where o.status is null or o.status <> 'cancelled'
group by o.customer_id, c.nation_id
