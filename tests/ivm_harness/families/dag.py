"""Families of models in a dbt DAG: over views, ephemerals and other ivm models."""

from __future__ import annotations

from ..spec import Family
from .tables import CUSTOMERS, NATIONS, ORDERS

DAG: list[Family] = [
    # --- models in a dbt DAG: over views, ephemerals, other ivm models (issue 12) ------------
    # A view is read through its query (compiler/frontend/views.py): a staging view flattens into the
    # model's joins; an unaliased expression keeps Spark's column name.
    Family(
        "over_views",
        (ORDERS, CUSTOMERS, NATIONS),
        """
        select n.region, s.status, count(*) as n, sum(s.amount) as amount,
               min(s.qty) as min_qty, sum(`(qty * 2)`) as twice
        from {{ ref('over_views__stg_orders') }} s
        join {{ ref('over_views__int_customers') }} c on c.cid = s.cust
        left join {{ source('base', 'nations') }} n on n.nid = c.nation
        group by n.region, s.status
        """,
        upstream=(
            (
                "over_views__stg_orders",
                "view",
                """
                select oid, cust, upper(status) as status, amount, qty, qty * 2
                from {{ source('base', 'orders') }}
                where qty is not null or amount > 0
                """,
            ),
            (
                "over_views__stg_customers",
                "view",
                "select cid, nation, segment from {{ source('base', 'customers') }}",
            ),
            (
                "over_views__int_customers",
                "view",
                """
                select cid, nation from {{ ref('over_views__stg_customers') }}
                where segment is distinct from 'b'
                """,
            ),
        ),
    ),
    # An aggregating ephemeral model (a CTE of the compiled SQL) under an outer join, over a
    # view: the aggregate is a sub-query state.
    Family(
        "over_ephemeral_agg",
        (ORDERS, CUSTOMERS),
        """
        select c.segment, count(*) as n, sum(e.total) as total, sum(e.n) as orders,
               max(e.top) as top
        from {{ ref('over_ephemeral_agg__per_cust') }} e
        left join {{ source('base', 'customers') }} c on c.cid = e.cust
        group by c.segment
        """,
        upstream=(
            (
                "over_ephemeral_agg__per_cust",
                "ephemeral",
                """
                select cust, sum(amount) as total, count(*) as n, max(weight) as top
                from {{ ref('over_ephemeral_agg__stg') }}
                group by cust
                """,
            ),
            (
                "over_ephemeral_agg__stg",
                "view",
                "select * from {{ source('base', 'orders') }} where status is not null",
            ),
        ),
    ),
    # Three levels of ivm models: each reads its upstream's state table through the
    # upstream's view.
    Family(
        "ivm_stack3",
        (ORDERS, CUSTOMERS),
        """
        select c.segment, count(*) as custs, sum(h.n) as n, sum(h.amount) as amount,
               max(h.statuses) as statuses
        from {{ ref('ivm_stack3__per_cust') }} h
        join {{ source('base', 'customers') }} c on c.cid = h.cust
        group by c.segment
        """,
        upstream=(
            (
                "ivm_stack3__per_status",
                "ivm",
                """
                select cust, status, count(*) as n, sum(amount) as amount
                from {{ source('base', 'orders') }}
                group by cust, status
                """,
            ),
            (
                "ivm_stack3__per_cust",
                "ivm",
                """
                select cust, count(*) as statuses, sum(n) as n, sum(amount) as amount
                from {{ ref('ivm_stack3__per_status') }}
                group by cust
                """,
            ),
        ),
    ),
]
