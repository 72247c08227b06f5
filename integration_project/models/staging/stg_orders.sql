-- Staging view over the orders seed: renamed columns, the status in lower case.
-- The ivm models below read it through its query (a view has no snapshots of its own).
select
    id          as order_id,
    customer_id,
    order_date,
    amount,
    lower(status) as status
from {{ ref('orders') }}
