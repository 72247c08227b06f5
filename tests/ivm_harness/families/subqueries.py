"""Families of sub-queries: aggregating and DISTINCT sub-query states, EXISTS / IN,
scalar sub-queries, and what TPC-H needs (top-k, comma joins, correlated conditions)."""

from __future__ import annotations

from ..spec import Family
from .tables import CODES, CUSTOMERS, NATIONS, ORDERS

SUBQUERIES: list[Family] = [
    # --- sub-queries that aggregate or are DISTINCT: states of their own (stages.py) ----------
    Family(
        "nested_join_aggs",
        (ORDERS, CUSTOMERS),
        """
        select d.segment, count(*) as n, sum(t.total) as total, max(t.n) as max_orders,
               min(t.total) as min_total
        from (
            select cust, count(*) as n, sum(amount) as total
            from {{ source('base', 'orders') }} group by cust
        ) t
        join (select distinct cid, segment from {{ source('base', 'customers') }}) d
          on d.cid = t.cust
        group by d.segment
        """,
    ),
    Family(
        "nested_agg_of_agg",
        (ORDERS,),
        """
        with per_cust as (
            select status, cust, count(*) as n, sum(qty) as q
            from {{ source('base', 'orders') }}
            where oid is not null
            group by status, cust
            having count(*) > 1 or sum(qty) is null
        )
        select status, count(*) as custs, sum(n) as orders, max(q) as max_q, avg(n) as avg_n
        from per_cust
        group by status
        """,
    ),
    Family(
        "nested_left_aggs",
        (ORDERS, CUSTOMERS),
        """
        select a.cust, a.n, a.amount, b.segments, b.credit
        from (
            select cust, count(*) as n, sum(amount) as amount
            from {{ source('base', 'orders') }} group by cust
        ) a
        left join (
            select cid, count(distinct segment) as segments, max(credit) as credit
            from {{ source('base', 'customers') }} group by cid
        ) b on b.cid = a.cust
        """,
    ),
    # --- EXISTS / NOT EXISTS / IN (sub-query): joins with DISTINCT states (semi_join.py) -------
    Family(
        "semi_exists_in",
        (ORDERS, CUSTOMERS, NATIONS),
        """
        select o.oid, o.status, o.amount
        from {{ source('base', 'orders') }} o
        where (o.qty is null or o.qty <> 0)
          and exists (
              select 1 from {{ source('base', 'customers') }} c
              where c.cid = o.cust and c.credit > 10
          )
          and o.status in (select n.nname from {{ source('base', 'nations') }} n
                           where n.region <> 'r0')
        """,
    ),
    Family(
        "semi_not_exists_agg",
        (ORDERS, CUSTOMERS),
        """
        select c.segment, count(*) as n, sum(c.credit) as credit, max(c.nation) as max_nation
        from {{ source('base', 'customers') }} c
        where not exists (
            select 1 from {{ source('base', 'orders') }} o
            where o.cust = c.cid and o.status <> 'a'
        )
        group by c.segment
        """,
    ),
    # NOT IN with SQL's NULL semantics: a NULL in the sub-query (or an outer NULL) drops the
    # row unless the sub-query is empty; changes on both sides. The sub-query selects few
    # rows, so it is empty, NULL-free or holds a NULL by turns. Uncorrelated here, correlated
    # in semi_not_in_agg. (Both in one WHERE, four states, made this the suite's slowest
    # family: ~200 s a round under the full harness.)
    Family(
        "semi_not_in",
        (ORDERS, NATIONS),
        """
        select o.oid, o.status, o.cust, o.amount
        from {{ source('base', 'orders') }} o
        where o.status not in (select n.nname from {{ source('base', 'nations') }} n
                               where n.region = 'b' and n.nid = 1)
          and 2 not in (select n.nid from {{ source('base', 'nations') }} n
                        where n.region = 'a')
        """,
    ),
    Family(
        "semi_not_in_agg",
        (CUSTOMERS, ORDERS),
        """
        select c.segment, count(*) as n, sum(c.credit) as credit, min(c.cid) as low
        from {{ source('base', 'customers') }} c
        where c.nation not in (
            select o.cust from {{ source('base', 'orders') }} o
            where o.status = c.segment and o.qty > 25
        )
        group by c.segment
        """,
    ),
    # IN / NOT IN between a string and an int column: Spark's IN compares them as text
    Family(
        "semi_in_mixed_types",
        (CODES, ORDERS, NATIONS),
        """
        select c.code, c.n
        from {{ source('base', 'codes') }} c
        where c.code in (select o.cust from {{ source('base', 'orders') }} o where o.qty > 0)
          and c.code not in (select n.nid from {{ source('base', 'nations') }} n
                             where n.nid < 0)
        """,
    ),
    # --- scalar sub-queries: joins with aggregate states (scalar.py) --------------------------
    Family(
        "scalar_subqueries",
        (ORDERS, CUSTOMERS, NATIONS),
        """
        select c.cid, c.segment,
               (select count(*) from {{ source('base', 'orders') }} o
                where o.cust = c.cid) as n_orders,
               (select sum(o.amount) from {{ source('base', 'orders') }} o
                where o.cust = c.cid and o.status <> 'a') as total,
               (select max(n.nid) from {{ source('base', 'nations') }} n)
        from {{ source('base', 'customers') }} c
        where c.credit > (select avg(o2.qty) from {{ source('base', 'orders') }} o2)
           or c.credit is null
        """,
    ),
    # --- what TPC-H needs (issue 35) ---------------------------------------------------------
    # Top-k (top_k.py): the unlimited aggregate is the state, the view orders and limits it;
    # comma joins (comma_joins.py). The ORDER BY is total (the group keys end it).
    Family(
        "top_k_comma_join",
        (ORDERS, CUSTOMERS),
        """
        select o.cust, c.segment, count(*) as n, sum(o.amount) as amount
        from {{ source('base', 'orders') }} o, {{ source('base', 'customers') }} c
        where o.cust = c.cid and (o.qty is null or o.qty > 3)
        group by o.cust, c.segment
        order by amount desc, o.cust, c.segment nulls last
        limit 4
        """,
    ),
    # A HAVING that tests a scalar sub-query (having.py), the value an expression of the
    # aggregate (scalar.py), and IN over a grouped sub-query with its own HAVING (semi_join.py)
    Family(
        "having_subqueries",
        (ORDERS,),
        """
        select o.status, sum(o.amount) as amount, count(*) as n
        from {{ source('base', 'orders') }} o
        where o.cust in (select o2.cust from {{ source('base', 'orders') }} o2
                         group by o2.cust having sum(o2.qty) > 40)
        group by o.status
        having sum(o.amount) > (select 0.2 * sum(o3.amount)
                                from {{ source('base', 'orders') }} o3)
        """,
    ),
    # EXISTS / NOT EXISTS correlated by an equality and a comparison (inequality.py), and a
    # correlated scalar sub-query whose value is an expression of its aggregate (TPC-H Q17,
    # Q21): NULL keys, NULL compared values, ties
    Family(
        "exists_inequality",
        (ORDERS, CUSTOMERS),
        """
        select o.oid, o.cust, o.status, o.qty, c.segment
        from {{ source('base', 'orders') }} o, {{ source('base', 'customers') }} c
        where o.cust = c.cid
          and exists (select 1 from {{ source('base', 'orders') }} o2
                      where o2.cust = o.cust and o2.status <> o.status)
          and not exists (select 1 from {{ source('base', 'orders') }} o3
                          where o3.cust = o.cust and o3.qty > o.qty and o3.status = 'a')
          and o.qty < (select 0.5 * avg(o4.qty) + 10 from {{ source('base', 'orders') }} o4
                       where o4.status = o.status)
        """,
    ),
    # EXISTS / NOT EXISTS / IN correlated by an equality and more comparisons, ranges
    # included (theta_semi_join.py): a DISTINCT state of the outer values that match, so a
    # change recomputes the outer rows of its equality keys; NULLs on both sides, ties
    Family(
        "exists_ranges",
        (ORDERS, CUSTOMERS),
        """
        select o.oid, o.cust, o.status, o.qty, o.amount
        from {{ source('base', 'orders') }} o
        where exists (select 1 from {{ source('base', 'orders') }} o2
                      where o2.cust = o.cust and o2.status <> o.status and o2.qty > o.qty)
          and not exists (select 1 from {{ source('base', 'customers') }} c
                          where c.cid = o.cust and c.credit between o.qty - 2 and o.qty + 2
                            and c.nation > o.oid)
          and o.cust in (select c2.cid from {{ source('base', 'customers') }} c2
                         where c2.credit >= o.qty and c2.nation < o.oid)
        """,
    ),
]
