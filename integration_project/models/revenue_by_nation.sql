{{ config(materialized='ivm') }}
-- Star schema: orders x customers x nations. Customers without a (known) nation land in
-- the NULL nation through the LEFT JOIN.
select
    n.name        as nation,
    count(*)      as orders,
    sum(o.amount) as revenue,
    avg(o.amount) as avg_order,
    max(o.amount) as biggest_order
from {{ ref('orders') }} o
join {{ ref('customers') }} c on o.customer_id = c.id
left join {{ ref('nations') }} n on c.nation_id = n.id
group by n.name
