-- Staging view over the customers seed.
select
    id        as customer_id,
    name      as customer_name,
    nation_id,
    segment
from {{ ref('customers') }}
