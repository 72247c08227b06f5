{{ config(materialized='ivm') }}
-- The nations (and regions) that have at least one order.
select distinct
    n.name   as nation,
    n.region as region
from {{ ref('orders') }} o
join {{ ref('customers') }} c on o.customer_id = c.id
join {{ ref('nations') }} n on c.nation_id = n.id
