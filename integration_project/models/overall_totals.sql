{{ config(materialized='ivm') }}
-- No GROUP BY: always exactly one row, even when orders is empty.
select
    count(*)    as orders,
    sum(amount) as revenue,
    avg(amount) as avg_order
from {{ ref('orders') }}
