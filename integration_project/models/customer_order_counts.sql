{{ config(materialized='ivm') }}
-- Every customer with its number of orders; customers without orders show 0.
select
    c.id       as customer_id,
    c.name     as customer_name,
    count(o.id) as order_count
from {{ ref('customers') }} c
left join {{ ref('orders') }} o on o.customer_id = c.id
group by c.id, c.name
