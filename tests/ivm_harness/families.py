"""The base tables and query families of the differential test.

To add a family, append one `Family(...)` to `FAMILIES`: a name (the model name and pytest
id), the tables it reads, and the SELECT, which references base tables as
`{{ source('base', '<table>') }}`.  Reuse a table below or declare a new one (a new name);
tables are shared by every family that lists them, and their data is generated from the
column declarations (`key=True` columns have a small domain, so groups collide and join keys
match).
"""

from __future__ import annotations

from dataclasses import replace

from .spec import Col, Family, Table

# ------------------------------------------------------------------------------------------------
# base tables
# ------------------------------------------------------------------------------------------------

#: All seven types; two string/int group keys; NULLs everywhere.
T1 = Table(
    "t1",
    (
        Col("k1", "string", key=True),
        Col("k2", "int", key=True),
        Col("i", "int"),
        Col("b", "bigint"),
        Col("d", "decimal(10,2)"),
        Col("x", "double"),
        Col("dt", "date"),
        Col("flag", "boolean"),
    ),
)

#: Keys of other types (a NOT NULL bigint, a date, a boolean).
T2 = Table(
    "t2",
    (
        Col("g", "bigint", key=True, nullable=False),
        Col("day", "date", key=True),
        Col("active", "boolean", key=True),
        Col("s", "string"),
        Col("qty", "int"),
        Col("amount", "decimal(10,2)"),
        Col("score", "double"),
    ),
)

#: A base table written merge-on-read (its deletes/updates leave delete files, which Iceberg's
#: changelog procedure refuses: docs/architecture.md, §3).
T3_MOR = Table(
    "t3_mor",
    (
        Col("k", "string", key=True),
        Col("v", "int"),
        Col("w", "double"),
    ),
    properties=(
        ("format-version", "2"),
        ("write.delete.mode", "merge-on-read"),
        ("write.update.mode", "merge-on-read"),
        ("write.merge.mode", "merge-on-read"),
    ),
)

#: Join inputs shaped like a small star: orders -> customers -> nations (keys collide, NULLs).
ORDERS = Table(
    "orders",
    (
        Col("oid", "int", key=True),
        Col("cust", "int", key=True),
        Col("status", "string", key=True),
        Col("amount", "decimal(10,2)"),
        Col("weight", "double"),
        Col("qty", "int"),
    ),
)
CUSTOMERS = Table(
    "customers",
    (
        Col("cid", "int", key=True),
        Col("nation", "int", key=True),
        Col("segment", "string", key=True),
        Col("credit", "int"),
    ),
)
NATIONS = Table(
    "nations",
    (
        Col("nid", "int", key=True),
        Col("nname", "string", key=True),
        Col("region", "string", key=True),
    ),
)

#: The star's first two tables written merge-on-read, so a join's capture meets delete files
#: on both sides (the version diff restricted to the touched files: capture/touched_files.py).
MOR_PROPERTIES = T3_MOR.properties
ORDERS_MOR = replace(ORDERS, name="orders_mor", properties=MOR_PROPERTIES)
CUSTOMERS_MOR = replace(CUSTOMERS, name="customers_mor", properties=MOR_PROPERTIES)

#: Format version 3 (Iceberg 1.10): merge-on-read deletes are deletion vectors (Puffin files,
#: one a data file) instead of position delete files, and every table carries row lineage
#: (the metadata columns `_row_id`, `_last_updated_sequence_number`, never part of `*`).
V3_DV_PROPERTIES = tuple((k, "3" if k == "format-version" else v) for k, v in MOR_PROPERTIES)
ORDERS_V3_DV = replace(ORDERS, name="orders_v3_dv", properties=V3_DV_PROPERTIES)
CUSTOMERS_V3 = replace(CUSTOMERS, name="customers_v3", properties=(("format-version", "3"),))

#: Strings that equal a number when cast to it ('01', '1.0', ' 1') but not as text: IN compares
#: a string with a number as text, a join equality as numbers.
CODES = Table(
    "codes",
    (
        Col("code", "string", key=True, domain=("1", "01", "1.0", " 1", "2", "-1", "x", "")),
        Col("n", "int", key=True),
    ),
)

# ------------------------------------------------------------------------------------------------
# families
# ------------------------------------------------------------------------------------------------

FAMILIES: list[Family] = [
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

# --- window functions: affected-partition recompute (window.py) ---------------------------------
# Rows that tie in a window's ORDER BY are identical in every column the model shows, and
# the windows whose value depends on the position among ties (row_number, ntile, lag/lead,
# ROWS frames) share one ORDER BY: so a fresh run's result is the same bag every time.
FAMILIES += [
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

# --- bag states read as repeated rows (bag_input.py) -------------------------------------------
FAMILIES += [
    # A UNION ALL sub-query is a bag state; its parent joins (outer) and aggregates its rows,
    # each stored row repeated its count times, in every version and in its change log.
    Family(
        "union_all_in_subquery",
        (ORDERS, CUSTOMERS, NATIONS),
        """
        select u.k, n.region, count(*) as n, sum(u.v) as total, min(u.v) as low
        from (
            select o.cust as k, o.amount as v from {{ source('base', 'orders') }} o
            where o.status <> 'c'
            union all
            select c.nation, cast(c.credit as decimal(10,2)) from {{ source('base', 'customers') }} c
        ) u
        left join {{ source('base', 'nations') }} n on n.nid = u.k
        group by u.k, n.region
        """,
    ),
    # An ivm model over two bag-shaped ivm models: a plain SELECT (its duplicates are
    # copies) and an EXCEPT ALL (l - r copies), joined.
    Family(
        "ivm_over_bags",
        (ORDERS, CUSTOMERS),
        """
        select b.status, count(*) as n, sum(b.amount) as amount, count(e.k) as kept
        from {{ ref('ivm_over_bags__orders') }} b
        left join {{ ref('ivm_over_bags__except') }} e on e.k = b.cust
        group by b.status
        """,
        upstream=(
            (
                "ivm_over_bags__orders",
                "ivm",
                """
                select cust, status, amount from {{ source('base', 'orders') }}
                where qty is null or qty > -20
                """,
            ),
            (
                "ivm_over_bags__except",
                "ivm",
                """
                select cust as k from {{ source('base', 'orders') }}
                except all
                select nation from {{ source('base', 'customers') }}
                """,
            ),
        ),
    ),
]

# --- set operations whose branches keep states of their own (stages.wrap_stage_branches) --------
FAMILIES += [
    # Aggregating branches are sub-query states; the UNION ALL reads their views.
    Family(
        "union_all_of_aggregates",
        (ORDERS, CUSTOMERS),
        """
        select o.cust as k, count(*) as n, sum(o.amount) as v
        from {{ source('base', 'orders') }} o group by o.cust
        union all
        select c.nation, count(*), sum(cast(c.credit as decimal(10,2)))
        from {{ source('base', 'customers') }} c group by c.nation
        union all
        select c.cid, 1, cast(c.credit as decimal(10,2))
        from {{ source('base', 'customers') }} c where c.segment = 'a'
        """,
    ),
    # EXCEPT of a grouped branch with HAVING and a DISTINCT branch.
    Family(
        "except_of_aggregate",
        (ORDERS, CUSTOMERS),
        """
        select o.status as s from {{ source('base', 'orders') }} o
        group by o.status having count(*) > 1
        except
        select distinct c.segment from {{ source('base', 'customers') }} c where c.credit > 30
        """,
    ),
]

# --- INTERSECT / EXCEPT: a count per operand and row (union.py) ---------------------------------
FAMILIES += [
    # EXCEPT of a UNION ALL chain: a row is shown while the left operand has it and the right
    # one does not; changes on every operand (the right one a join).
    Family(
        "set_except",
        (ORDERS, CUSTOMERS, NATIONS),
        """
        (
            select o.cust as k, o.status as s from {{ source('base', 'orders') }} o
            where o.qty > 0 or o.qty is null
            union all
            select c.nation, c.segment from {{ source('base', 'customers') }} c
        )
        except
        select c.cid, n.region
        from {{ source('base', 'customers') }} c
        join {{ source('base', 'nations') }} n on n.nid = c.nation
        """,
    ),
    # EXCEPT ALL chain: max(l - r1 - r2, 0) copies of each row.
    Family(
        "set_except_all",
        (ORDERS, CUSTOMERS, NATIONS),
        """
        select o.cust as k, o.status as s from {{ source('base', 'orders') }} o
        except all
        select c.cid, c.segment from {{ source('base', 'customers') }} c
        except all
        select n.nid, n.region from {{ source('base', 'nations') }} n
        """,
    ),
    # INTERSECT ALL: least(l, r) copies; duplicates on both sides.
    Family(
        "set_intersect_all",
        (ORDERS, CUSTOMERS),
        """
        select o.cust as k, o.status as s from {{ source('base', 'orders') }} o
        intersect all
        select c.nation, c.segment from {{ source('base', 'customers') }} c where c.credit <> 0
        """,
    ),
    # An INTERSECT sub-query is a state of its own (distinct rows), joined and aggregated.
    Family(
        "set_intersect_in_subquery",
        (ORDERS, CUSTOMERS),
        """
        select c.segment, count(*) as n, min(x.k) as low
        from (
            select cust as k from {{ source('base', 'orders') }} where status <> 'b'
            intersect
            select nation from {{ source('base', 'customers') }} where credit > -20
        ) x
        join {{ source('base', 'customers') }} c on c.cid = x.k
        group by c.segment
        """,
    ),
]

# --- nested set operations: each a sub-query state of its own (stages.wrap_stage_branches) -----
FAMILIES += [
    # (a INTERSECT ALL b) INTERSECT ALL c: the inner one is a bag state, read least(l, r) times.
    Family(
        "set_intersect_three",
        (ORDERS, CUSTOMERS, NATIONS),
        """
        select o.cust as k, o.status as s from {{ source('base', 'orders') }} o
        intersect all
        select c.nation, c.segment from {{ source('base', 'customers') }} c
        intersect all
        select n.nid, n.region from {{ source('base', 'nations') }} n
        """,
    ),
    # (a EXCEPT (b INTERSECT c)) UNION ALL d: two states of distinct rows, the INTERSECT's
    # read by the EXCEPT, the EXCEPT's by the UNION ALL.
    Family(
        "set_except_of_intersect",
        (ORDERS, CUSTOMERS, NATIONS),
        """
        (
            select o.cust as k, o.status as s from {{ source('base', 'orders') }} o
            where o.qty > 0 or o.qty is null
            except
            (
                select c.cid, c.segment from {{ source('base', 'customers') }} c
                intersect
                select n.nid, n.nname from {{ source('base', 'nations') }} n
            )
        )
        union all
        select c.nation, c.segment from {{ source('base', 'customers') }} c where c.credit > 0
        """,
    ),
    # ((a EXCEPT ALL b) EXCEPT c) EXCEPT ALL d: a bag state (l - r copies) read by a
    # distinct EXCEPT, whose state of distinct rows is read by an ALL form. (One chain of
    # either form would differ: a row twice in a and once in b is kept.)
    Family(
        "set_except_mixed",
        (ORDERS, CUSTOMERS, NATIONS),
        """
        select o.cust as k, o.status as s from {{ source('base', 'orders') }} o
        except all
        select c.nation, c.segment from {{ source('base', 'customers') }} c where c.credit > 20
        except
        select n.nid, n.region from {{ source('base', 'nations') }} n where n.nname = 'a'
        except all
        select c.cid, c.segment from {{ source('base', 'customers') }} c where c.credit < -20
        """,
    ),
    # a UNION inside a UNION ALL (a state of distinct rows), and a 3-operand INTERSECT.
    Family(
        "set_union_in_union_all",
        (ORDERS, CUSTOMERS, NATIONS),
        """
        select o.cust as k, o.status as s from {{ source('base', 'orders') }} o
        where o.status <> 'b'
        union all
        (
            select c.nation, c.segment from {{ source('base', 'customers') }} c
            union
            select n.nid, n.region from {{ source('base', 'nations') }} n
        )
        union all
        (
            select c.cid, c.segment from {{ source('base', 'customers') }} c
            intersect
            select o.cust, o.status from {{ source('base', 'orders') }} o
            intersect
            select n.nid, n.nname from {{ source('base', 'nations') }} n
        )
        """,
    ),
]

# --- UNION ALL / UNION: one state fed by the sum of the branches' deltas (union.py) --------------
FAMILIES += [
    # Branches with joins (inner and outer), WHERE, a relation read by two branches, and
    # rows two branches both produce.
    Family(
        "union_all_joins",
        (ORDERS, CUSTOMERS, NATIONS),
        """
        select o.cust as k, o.amount as v, 'order' as src
        from {{ source('base', 'orders') }} o
        where o.qty > 0 or o.qty is null
        union all
        select c.cid, cast(c.credit as decimal(10,2)), c.segment
        from {{ source('base', 'customers') }} c
        join {{ source('base', 'nations') }} n on n.nid = c.nation
        union all
        select o.cust, o.amount, o.status
        from {{ source('base', 'orders') }} o
        left join {{ source('base', 'customers') }} c on c.cid = o.cust
        where c.cid is null
        """,
    ),
    # Spark widens an int branch to a string one: '1' and 1 become one row.
    Family(
        "union_all_widen",
        (CODES, ORDERS),
        """
        select c.code as v, c.n as n from {{ source('base', 'codes') }} c
        union all
        select o.cust, o.qty from {{ source('base', 'orders') }} o where o.status <> 'b'
        """,
    ),
    Family(
        "union_distinct",
        (ORDERS, CUSTOMERS, NATIONS),
        """
        select status as s, cust as n from {{ source('base', 'orders') }}
        union
        select segment, nation from {{ source('base', 'customers') }} where credit > 0
        union
        select nname, nid from {{ source('base', 'nations') }}
        """,
    ),
    # A UNION sub-query is a state of its own (distinct rows), read by the aggregate above.
    Family(
        "union_in_subquery",
        (ORDERS, CUSTOMERS),
        """
        select c.segment, count(*) as n, max(u.k) as top
        from (
            select cust as k from {{ source('base', 'orders') }} where status = 'a'
            union
            select cid from {{ source('base', 'customers') }} where credit > 10
        ) u
        join {{ source('base', 'customers') }} c on c.cid = u.k
        group by c.segment
        """,
    ),
]
