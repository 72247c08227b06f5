"""Families of joins: inner and self joins with DISTINCT, MIN/MAX and HAVING, auxiliary
join states, outer joins, dbt-style CTEs."""

from __future__ import annotations

from ..spec import Family
from .tables import CUSTOMERS, NATIONS, ORDERS

JOINS: list[Family] = [
    # --- inner joins, self joins, DISTINCT, MIN/MAX, count distinct, HAVING (issue 3) ---------
    Family(
        "join2_bag",
        (ORDERS, CUSTOMERS),
        """
        select o.oid, o.status, c.segment, o.amount, o.weight
        from {{ source('base', 'orders') }} o
        join {{ source('base', 'customers') }} c on o.cust = c.cid
        """,
    ),
    Family(
        "join3_agg",
        (ORDERS, CUSTOMERS, NATIONS),
        """
        select n.region, c.segment, count(*) as n, count(o.qty) as n_qty, sum(o.amount) as revenue,
               avg(o.amount) as avg_amount, avg(o.weight) as avg_weight, min(o.qty) as min_qty,
               max(o.amount) as biggest
        from {{ source('base', 'orders') }} o
        join {{ source('base', 'customers') }} c on o.cust = c.cid
        join {{ source('base', 'nations') }} n on c.nation = n.nid
        group by n.region, c.segment
        """,
    ),
    Family(
        "join_comma_where",
        (ORDERS, CUSTOMERS),
        """
        select c.nation, sum(o.qty) as qty, count(*) as n
        from {{ source('base', 'orders') }} o, {{ source('base', 'customers') }} c
        where o.cust = c.cid and (o.amount > 0 or c.credit < 50)
        group by c.nation
        """,
    ),
    Family(
        "self_join",
        (ORDERS,),
        """
        select a.oid, b.oid as other, a.cust, a.qty + b.qty as qty2
        from {{ source('base', 'orders') }} a
        join {{ source('base', 'orders') }} b on a.cust = b.cust and a.oid < b.oid
        """,
    ),
    Family(
        "distinct_join",
        (ORDERS, CUSTOMERS),
        """
        select distinct c.segment, o.status
        from {{ source('base', 'orders') }} o
        join {{ source('base', 'customers') }} c on o.cust = c.cid
        """,
    ),
    Family(
        "minmax",
        (ORDERS,),
        """
        select status, min(qty) as min_qty, max(qty) as max_qty, min(amount) as min_amount,
               max(weight) as max_weight, count(*) as n
        from {{ source('base', 'orders') }}
        group by status
        """,
    ),
    Family(
        "count_distinct_having",
        (ORDERS, CUSTOMERS),
        """
        select c.segment, count(distinct o.status) as statuses, count(*) as n, max(o.qty) as mq
        from {{ source('base', 'orders') }} o
        join {{ source('base', 'customers') }} c on o.cust = c.cid
        group by c.segment
        having count(*) > 1 and coalesce(sum(o.qty), 0) >= 0
        """,
    ),
    Family(
        "cte_subquery",
        (ORDERS, CUSTOMERS),
        """
        with big as (select cust, qty, amount from {{ source('base', 'orders') }} where qty > 0)
        select s.segment, count(*) as n, sum(b.amount) as total
        from big b
        join (select cid, segment from {{ source('base', 'customers') }}) s on b.cust = s.cid
        group by s.segment
        """,
    ),
    Family(
        "join_ungrouped",
        (ORDERS, NATIONS),
        """
        select count(*) as n, sum(o.amount) as total, max(o.qty) as mq, min(n.nname) as first_name
        from {{ source('base', 'orders') }} o
        join {{ source('base', 'nations') }} n on o.cust = n.nid
        """,
    ),
    # --- auxiliary join states (issue 11): A = facts pre-aggregated, model over A JOIN dim ----
    Family(
        "join_agg_aux",
        (ORDERS, CUSTOMERS),
        """
        select c.nation, o.status, count(*) as n, count(o.qty) as n_qty, sum(o.qty) as qty,
               sum(o.amount) as revenue, min(o.weight) as min_weight, max(o.amount) as biggest
        from {{ source('base', 'orders') }} o
        join {{ source('base', 'customers') }} c on o.cust = c.cid
        where c.credit > 10 or c.credit is null
        group by c.nation, o.status
        """,
        config={"ivm_aux_states": "always"},
    ),
    Family(
        # the preserved side as the dimension: customers without orders count one padded row
        "left_join_agg_aux",
        (CUSTOMERS, ORDERS),
        """
        select c.nation, o.status, count(*) as n, count(o.qty) as n_qty, sum(o.qty) as qty,
               min(o.weight) as min_weight, max(o.amount) as biggest
        from {{ source('base', 'customers') }} c
        left join {{ source('base', 'orders') }} o
          on o.cust = c.cid and (o.amount > 0 or o.amount is null) and c.segment <> 'b'
        where c.credit > 10 or c.credit is null
        group by c.nation, o.status
        """,
        config={"ivm_aux_states": "always"},
    ),
    Family(
        "join3_agg_aux",
        (ORDERS, CUSTOMERS, NATIONS),
        """
        select n.region, c.segment, count(*) as n, sum(o.amount) as revenue, max(o.qty) as mq
        from {{ source('base', 'orders') }} o
        join {{ source('base', 'customers') }} c on o.cust = c.cid
        join {{ source('base', 'nations') }} n on c.nation = n.nid
        group by n.region, c.segment
        having count(*) > 1
        """,
        config={"ivm_aux_states": "always"},
    ),
    Family(
        # DISTINCT (issue 37): A = the orders x customers grouped by nation, segment and
        # status; the model a DISTINCT over A JOIN nations
        "join3_distinct_aux",
        (ORDERS, CUSTOMERS, NATIONS),
        """
        select distinct n.region, c.segment, o.status
        from {{ source('base', 'orders') }} o
        join {{ source('base', 'customers') }} c on o.cust = c.cid
        join {{ source('base', 'nations') }} n on c.nation = n.nid
        where o.qty > 0 or o.qty is null
        """,
        config={"ivm_aux_states": "always"},
    ),
    Family(
        # a customer whose orders the ON rejects, or who has none, is one padded row
        "left_join_distinct_aux",
        (CUSTOMERS, ORDERS),
        """
        select distinct c.nation, c.segment, o.status
        from {{ source('base', 'customers') }} c
        left join {{ source('base', 'orders') }} o
          on o.cust = c.cid and (o.amount > 0 or o.amount is null)
        """,
        config={"ivm_aux_states": "always"},
    ),
    # --- outer joins (issue 4) ------------------------------------------------------------------
    Family(
        "left_join",
        (CUSTOMERS, ORDERS),
        """
        select c.cid, c.segment, o.oid, o.amount
        from {{ source('base', 'customers') }} c
        left join {{ source('base', 'orders') }} o on o.cust = c.cid
        """,
    ),
    Family(
        "right_join_on_extra",
        (CUSTOMERS, ORDERS),
        """
        select c.cid, c.segment, o.oid, o.qty
        from {{ source('base', 'customers') }} c
        right join {{ source('base', 'orders') }} o on o.cust = c.cid and c.credit > 20
        """,
    ),
    Family(
        "full_join",
        (CUSTOMERS, NATIONS),
        """
        select c.cid, c.nation, n.nid, n.nname
        from {{ source('base', 'customers') }} c
        full join {{ source('base', 'nations') }} n on c.nation = n.nid
        """,
    ),
    Family(
        "chain_inner_left",
        (ORDERS, CUSTOMERS, NATIONS),
        """
        select o.oid, c.segment, n.nname
        from {{ source('base', 'orders') }} o
        join {{ source('base', 'customers') }} c on o.cust = c.cid
        left join {{ source('base', 'nations') }} n on c.nation = n.nid and n.region <> 'r1'
        """,
    ),
    Family(
        "left_join_agg",
        (CUSTOMERS, ORDERS),
        """
        select c.cid, count(o.oid) as orders, sum(o.amount) as total, min(o.qty) as min_qty,
               max(o.weight) as max_weight, count(*) as n
        from {{ source('base', 'customers') }} c
        left join {{ source('base', 'orders') }} o on o.cust = c.cid
        group by c.cid
        """,
    ),
    Family(
        "left_join_where_null_side",
        (CUSTOMERS, ORDERS),
        """
        select c.segment, o.status, count(*) as n
        from {{ source('base', 'customers') }} c
        left join {{ source('base', 'orders') }} o on o.cust = c.cid
        where o.qty is null or o.qty > 2
        group by c.segment, o.status
        """,
    ),
    # LEFT JOINs whose padded rows the WHERE drops are inner joins (null_rejection.py): orders
    # by a COALESCE of comparisons; nations not, as one disjunct keeps NULL-padded rows
    Family(
        "left_join_where_rejected",
        (CUSTOMERS, ORDERS, NATIONS),
        """
        select c.cid, c.segment, o.status, o.qty, n.nname
        from {{ source('base', 'customers') }} c
        left join {{ source('base', 'orders') }} o on o.cust = c.cid
        left join {{ source('base', 'nations') }} n on n.nid = c.nation
        where coalesce(o.qty > 1 or o.status = 'a', false)
          and (n.region <> 'r1' or c.segment is null)
        """,
    ),
    # the hand-written anti-padding filter: IS NOT NULL of the null-supplied side
    Family(
        "left_join_where_not_null",
        (CUSTOMERS, ORDERS),
        """
        select c.segment, o.status, count(*) as n, sum(o.amount) as total
        from {{ source('base', 'customers') }} c
        left join {{ source('base', 'orders') }} o on o.cust = c.cid
        where o.oid is not null
        group by c.segment, o.status
        """,
    ),
    # a FULL JOIN whose WHERE rejects one side's padding pads the other only (RIGHT here),
    # a RIGHT JOIN whose WHERE rejects an input before it is inner (`null_rejection.py`)
    Family(
        "full_join_where_one_side",
        (CUSTOMERS, ORDERS, NATIONS),
        """
        select c.segment, o.status, n.nname, count(*) as n, sum(o.qty) as qty
        from {{ source('base', 'customers') }} c
        full join {{ source('base', 'orders') }} o on o.cust = c.cid
        right join {{ source('base', 'nations') }} n on n.nid = c.nation
        where o.qty > 0 and (c.credit > 10 or n.region = 'r2')
        group by c.segment, o.status, n.nname
        """,
    ),
    # ... and a disjunction over both sides keeps both paddings
    Family(
        "full_join_where_kept",
        (CUSTOMERS, ORDERS),
        """
        select c.cid, c.credit, o.oid, o.qty
        from {{ source('base', 'customers') }} c
        full join {{ source('base', 'orders') }} o on o.cust = c.cid
        where o.qty > 1 or c.credit > 10
        """,
    ),
    # --- dbt-style CTEs: filtered inputs joined, a CTE used twice, bracketed joins -------------
    Family(
        "cte_filtered_joins",
        (ORDERS, CUSTOMERS, NATIONS),
        """
        with big as (
            select oid, cust, amount, qty * 2 as qty2
            from {{ source('base', 'orders') }}
            where qty > 1 or amount is null
        ),
        housed as (
            select cid, nation, upper(segment) as seg
            from {{ source('base', 'customers') }}
            where credit is not null
        )
        select h.seg, n.region, count(*) as n, count(b.oid) as n_orders, sum(b.amount) as total,
               max(b2.qty2) as max_qty2, count(b2.oid) as n_pairs
        from housed h
        left join big b on b.cust = h.cid
        left join big b2 on b2.cust = b.cust and b2.oid > b.oid
        join {{ source('base', 'nations') }} n on n.nid = h.nation
        group by h.seg, n.region
        """,
    ),
    Family(
        "cte_bracketed_left",
        (ORDERS, CUSTOMERS, NATIONS),
        """
        with active as (select * from {{ source('base', 'customers') }} where segment <> 's1')
        select o.oid, o.status, a.segment, n.nname
        from ({{ source('base', 'orders') }} o left join active a on o.cust = a.cid)
        left join (select nid, nname from {{ source('base', 'nations') }} where region <> 'r2') n
          on n.nid = a.nation
        where o.qty is null or o.qty > 0
        """,
    ),
]
