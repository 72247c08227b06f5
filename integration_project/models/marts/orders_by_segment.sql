{{ config(materialized='ivm') }}
-- Mart over a staging view and a parquet `table` model: orders and revenue per customer
-- segment (orders of unknown customers are dropped by the inner join).
select
    d.segment,
    count(*)      as orders,
    sum(o.amount) as revenue
from {{ ref('stg_orders') }} o
join {{ ref('customer_dim') }} d on d.customer_id = o.customer_id
group by d.segment
