{{ config(materialized='ivm', ivm_aux_states='always') }}
-- The nations (and regions) that have at least one order. An auxiliary state keeps the orders
-- x customers grouped by nation (`distinct_order_nations__ivm_aux`), so a change of nations
-- joins that state, not the orders.
select distinct
    n.name   as nation,
    n.region as region
from {{ ref('orders') }} o
join {{ ref('customers') }} c on o.customer_id = c.id
join {{ ref('nations') }} n on c.nation_id = n.id
