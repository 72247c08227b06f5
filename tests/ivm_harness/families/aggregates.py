"""Families of aggregates and projections over one table: GROUP BY, WHERE, FILTER,
moments, expressions, no GROUP BY, plain projections, a merge-on-read base."""

from __future__ import annotations

from ..spec import Family
from .tables import (
    CUSTOMERS,
    CUSTOMERS_MOR,
    CUSTOMERS_V3,
    ORDERS,
    ORDERS_MOR,
    ORDERS_V3_DV,
    T1,
    T2,
    T3_MOR,
)

AGGREGATES: list[Family] = [
    # --- GROUP BY with count / sum / avg (issue 2) ----------------------------------------------
    Family(
        "agg_one_key",
        (T1,),
        """
        select k1, count(*) as n, count(i) as n_i, sum(i) as sum_i, sum(b) as sum_b,
               sum(d) as sum_d, sum(x) as sum_x, avg(i) as avg_i, avg(d) as avg_d, avg(x) as avg_x
        from {{ source('base', 't1') }}
        group by k1
        """,
    ),
    Family(
        "agg_two_keys",
        (T1,),
        """
        select k1, k2, count(*) as n, count(x) as n_x, sum(i) as sum_i, sum(d) as sum_d,
               sum(x) as sum_x, avg(i) as avg_i, avg(d) as avg_d, avg(x) as avg_x
        from {{ source('base', 't1') }}
        group by k1, k2
        """,
    ),
    Family(
        "agg_date_bool_keys",
        (T2,),
        """
        select day, active, count(*) as n, count(score) as n_score, sum(qty) as sum_qty,
               sum(amount) as sum_amount, sum(score) as sum_score, avg(qty) as avg_qty,
               avg(amount) as avg_amount, avg(score) as avg_score
        from {{ source('base', 't2') }}
        group by day, active
        """,
    ),
    Family(
        "agg_bigint_key",
        (T2,),
        """
        select g, count(*) as n, count(s) as n_s, sum(amount) as sum_amount, avg(score) as avg_score
        from {{ source('base', 't2') }}
        group by g
        """,
    ),
    Family(
        "agg_hidden_keys",
        (T1,),
        """
        select sum(i) as sum_i, count(*) as n
        from {{ source('base', 't1') }}
        group by k1, k2
        """,
    ),
    # --- WHERE filters ---------------------------------------------------------------------------
    Family(
        "agg_where",
        (T1,),
        """
        select k2, flag, count(*) as n, sum(i) as sum_i, sum(d) as sum_d, avg(x) as avg_x
        from {{ source('base', 't1') }}
        where (i > 0 and k1 <> 'c') or x is null or dt >= date'2024-06-01'
        group by k2, flag
        """,
    ),
    # --- FILTER clauses and count_if (folded into guarded arguments) ----------------------------
    Family(
        "agg_filter",
        (T1,),
        """
        select k1,
               count(*) filter (where i > 0) as n_pos,
               count_if(flag) as n_flag,
               sum(d) filter (where k2 is not null and x > 0) as sum_d,
               avg(x) filter (where flag) as avg_x,
               min(i) filter (where dt >= date'2024-06-01') as min_i,
               max(b) filter (where not flag or flag is null) as max_b,
               count(distinct k2) filter (where i is null) as nd_k2
        from {{ source('base', 't1') }}
        group by k1
        having count(*) filter (where i > 0 or x is null) > 0 or max(x) is null
        """,
    ),
    # --- variance and stddev from shifted moment sums (aggregates/moments.py) --------------------
    Family(
        "agg_moments",
        (T1,),
        """
        select k1, var_pop(x) as vp_x, var_samp(x) as vs_x, stddev_pop(d) as sp_d,
               stddev(i) as ss_i, variance(b) as v_b, std(x) filter (where flag) as st_x,
               mean(x) as mean_x, count(*) as n
        from {{ source('base', 't1') }}
        group by k1
        having count(*) > 1 or var_pop(i) is null
        """,
    ),
    Family(
        "left_join_moments",
        (CUSTOMERS, ORDERS),
        """
        select var_samp(o.weight) as vs_w, stddev_pop(o.amount) as sp_amount,
               stddev_samp(c.credit + o.qty) as ss_mix, count(*) as n
        from {{ source('base', 'customers') }} c
        left join {{ source('base', 'orders') }} o on o.cust = c.cid
        """,
    ),
    # --- expressions before aggregation ----------------------------------------------------------
    Family(
        "agg_arg_exprs",
        (T1,),
        """
        select coalesce(k1, 'none') as k, sum(i * 2 + 1) as s1, sum(d * 3 - 1) as s2,
               avg(x / 2 + i) as a3, count(case when flag then 1 end) as n_true,
               sum(case when x > 0 then x else 0 end) as pos_x
        from {{ source('base', 't1') }}
        group by coalesce(k1, 'none')
        """,
    ),
    Family(
        "agg_key_exprs",
        (T1,),
        """
        select i % 3 as bucket, upper(k1) as uk, count(*) as n, sum(x) as sum_x
        from {{ source('base', 't1') }}
        group by i % 3, upper(k1)
        """,
    ),
    # --- aggregates without GROUP BY (exactly one row, also when empty) --------------------------
    Family(
        "agg_ungrouped",
        (T1,),
        """
        select count(*) as n, count(x) as n_x, sum(i) as sum_i, sum(b) as sum_b, sum(d) as sum_d,
               sum(x) as sum_x, avg(i) as avg_i, avg(d) as avg_d, avg(x) as avg_x
        from {{ source('base', 't1') }}
        """,
    ),
    Family(
        "agg_ungrouped_where",
        (T2,),
        """
        select count(*) as n, sum(amount) as total, avg(score) as avg_score,
               sum(qty) / count(*) as mean_qty, count(*) + 1 as n_plus,
               round(avg(amount), 2) as avg_amount2, coalesce(sum(score), -1) as sum_score
        from {{ source('base', 't2') }}
        where active and qty > 10
        """,
    ),
    # --- expressions over aggregates -------------------------------------------------------------
    Family(
        "agg_post_exprs",
        (T1,),
        """
        select k2, sum(i) / count(*) as mean_i, round(avg(d), 2) as avg_d2, count(*) + 1 as n_plus,
               sum(x) * 2 as twice_x, coalesce(sum(i), 0) as sum_i0, sum(d) - sum(i) as d_minus_i,
               count(x) = count(*) as all_x,
               case when count(*) > 2 then 'big' else 'small' end as size
        from {{ source('base', 't1') }}
        group by k2
        """,
    ),
    # --- plain projections (bag semantics: duplicates as often as the SELECT returns them) ------
    Family(
        "proj_exprs",
        (T1,),
        """
        select k1, i, d, x, i + 1 as i1, upper(k1) as uk, d * 2 as d2, x / 3 as x3, not flag as nf
        from {{ source('base', 't1') }}
        where i > -10 and (k2 is not null or flag)
        """,
    ),
    Family(
        "proj_keys_only",
        (T1,),
        """
        select k1, k2
        from {{ source('base', 't1') }}
        """,
    ),
    Family(
        "proj_star",
        (T2,),
        """
        select *
        from {{ source('base', 't2') }}
        where qty >= 0 or qty is null
        """,
    ),
    # --- merge-on-read base table ----------------------------------------------------------------
    Family(
        "agg_mor_base",
        (T3_MOR,),
        """
        select k, count(*) as n, sum(v) as sum_v, avg(w) as avg_w
        from {{ source('base', 't3_mor') }}
        group by k
        """,
        tags=("mor",),
    ),
    Family(
        "left_join_mor_bases",
        (ORDERS_MOR, CUSTOMERS_MOR),
        """
        select c.cid, c.segment, count(o.oid) as n, sum(o.amount) as amount,
               max(o.qty) as max_qty, min(o.status) as min_status
        from {{ source('base', 'customers_mor') }} c
        left join {{ source('base', 'orders_mor') }} o on o.cust = c.cid
        group by c.cid, c.segment
        """,
        tags=("mor",),
    ),
    Family(
        "join_v3_bases",
        (ORDERS_V3_DV, CUSTOMERS_V3),
        """
        select o.*, c.segment
        from {{ source('base', 'orders_v3_dv') }} o
        join {{ source('base', 'customers_v3') }} c on o.cust = c.cid
        """,
        tags=("mor", "v3"),
    ),
]
