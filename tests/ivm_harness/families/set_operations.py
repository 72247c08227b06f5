"""Families of bag states and set operations: UNION [ALL], INTERSECT, EXCEPT, nested, and
branches that keep states of their own."""

from __future__ import annotations

from ..spec import Family
from .tables import CODES, CUSTOMERS, NATIONS, ORDERS

# --- bag states read as repeated rows (bag_input.py) -------------------------------------------
SET_OPERATIONS: list[Family] = [
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
SET_OPERATIONS += [
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
SET_OPERATIONS += [
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
SET_OPERATIONS += [
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
SET_OPERATIONS += [
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
