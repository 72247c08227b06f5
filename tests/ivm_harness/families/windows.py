"""Families of window functions: affected-partition recompute (window.py)."""

from __future__ import annotations

from ..spec import Family
from .tables import CUSTOMERS, NATIONS, ORDERS, T1

# --- window functions: affected-partition recompute (window.py) ---------------------------------
# Rows that tie in a window's ORDER BY are identical in every column the model shows, and
# the windows whose value depends on the position among ties (row_number, ntile, lag/lead,
# ROWS frames) share one ORDER BY: so a fresh run's result is the same bag every time.
WINDOWS: list[Family] = [
    Family(
        "window_rank",
        (ORDERS,),
        """
        select oid, cust, status, amount,
               row_number() over (partition by cust order by amount desc, oid, status) as rn,
               rank() over (partition by cust order by amount) as rk,
               dense_rank() over (partition by cust, status order by oid desc) as drk,
               count(*) over (partition by cust) as n_cust,
               ntile(2) over (partition by cust order by amount desc, oid, status) as half
        from {{ source('base', 'orders') }}
        where status is distinct from 'c'
        """,
    ),
    Family(
        "window_running",
        (T1,),
        """
        select k1, k2, i, d,
               sum(d) over (partition by k1 order by i, k2) as run_d,
               max(i) over (partition by k1 order by i, k2, d
                            rows between 1 preceding and 1 following) as max_near,
               lag(d, 1, 0) over (partition by k1 order by i, k2, d) as prev_d,
               lead(i) over (partition by k1 order by i, k2, d) as next_i,
               first_value(k2) over (partition by k1 order by i nulls last, k2, d) as first_k2,
               count(i) over (partition by k1) as n_i,
               avg(i) over (partition by k1, k2) as avg_i
        from {{ source('base', 't1') }}
        where k2 is distinct from 2
        """,
    ),
    # The top row per customer over an outer join: a window sub-query is a state of its
    # own; changes on both sides move rows between partitions. (Over orders x customers x
    # nations the colliding keys made a 1,400-row state and a 70 s refresh under the suite.)
    Family(
        "window_top1",
        (ORDERS, NATIONS),
        """
        select cust, oid, amount, nname
        from (
            select o.cust, o.oid, o.amount, n.nname,
                   row_number() over (partition by o.cust
                                      order by o.amount desc, o.oid, n.nname) as rn
            from {{ source('base', 'orders') }} o
            left join {{ source('base', 'nations') }} n on n.nid = o.cust
        ) x
        where rn = 1
        """,
    ),
    # No PARTITION BY: the whole result is recomputed on any change.
    Family(
        "window_whole",
        (CUSTOMERS,),
        """
        select cid, segment, credit,
               rank() over (order by credit desc nulls last) as r,
               sum(credit) over (order by cid, segment, credit
                                 rows between unbounded preceding and current row) as running
        from {{ source('base', 'customers') }}
        where nation is not null
        """,
    ),
    # A window over a grouped sub-query (its own state).
    Family(
        "window_over_agg",
        (ORDERS,),
        """
        select status, cust, total,
               rank() over (partition by status order by total desc) as r,
               total - lag(total) over (partition by status order by total, cust) as gap
        from (
            select status, cust, sum(amount) as total
            from {{ source('base', 'orders') }}
            group by status, cust
        ) t
        """,
    ),
]
