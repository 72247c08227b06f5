{{ config(materialized='table', file_format='parquet') }}
-- A plain `table` model in parquet, rebuilt in full by every `dbt run`: it keeps no
-- snapshots, so the ivm model over it (orders_by_segment) reads it by snapshot diff.
select
    customer_id,
    customer_name,
    coalesce(segment, 'unknown') as segment
from {{ ref('stg_customers') }}
