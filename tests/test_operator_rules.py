"""Each operator's rule as the compiler writes it, without Spark (issue 36: golden tests per
operator). The differential families prove the rules against Spark; these pin the equation
each module implements, so a change to one shows here first:

* join (`operators/join.py`): d(R1 x R2 x R3) = dR1 x R2_old x R3_old + R1_new x dR2 x
  R3_old + R1_new x R2_new x dR3, one term per changed input;
* outer join (`operators/outer_join.py`): the inner terms plus NULL-padded terms for the
  right side of a LEFT JOIN when its matches change;
* the MERGE of an aggregate (`operators/state_merge.py`): a grouped state deletes a group at
  count 0 and inserts new groups; an ungrouped one (a single row) only updates;
* the window commit (`operators/window.py`): affected partitions deleted, recomputed rows
  inserted, the metadata row updated, in one MERGE;
* top-k (`operators/top_k.py`): the state keeps the unlimited result, the view limits it;
* the auxiliary split (`optimize/aux_state.py`): Agg(F ⋈ D) = Agg'(A ⋈ D) with A the facts
  pre-aggregated by their join key; for `D LEFT JOIN F` the padded row of a D row without
  facts counts 1 in count(*) and 0 in count(x); a SELECT DISTINCT keeps A as the facts
  grouped by join key and result columns, and stays a DISTINCT over A ⋈ D.
"""

from __future__ import annotations

import dataclasses

import pytest
from support.delta_sql import planned, renderer_for

from dbt.adapters.spark_ivm.compiler.errors import UnsupportedQueryError
from dbt.adapters.spark_ivm.compiler.operators import state_merge, top_k, window
from dbt.adapters.spark_ivm.compiler.operators.delta import DELTA, NEW, OLD, Prefix
from dbt.adapters.spark_ivm.compiler.operators.join import join_delta_terms
from dbt.adapters.spark_ivm.compiler.operators.prepare import MetaWrite
from dbt.adapters.spark_ivm.compiler.optimize import aux_state

SCHEMAS = {
    "s.a": [("k", "int"), ("x", "int")],
    "s.b": [("k", "int"), ("y", "int")],
    "s.c": [("k", "int"), ("z", "int")],
}
CHAIN = "select a.k, x, y, z from a join b on a.k = b.k join c on b.k = c.k"
TYPES = {"k": "int", "x": "int", "__ivm_count__": "bigint"}
META = MetaWrite(read='{"watermarks": {"a": 1}}', written='{"watermarks": {"a": 2}}')


def test_an_inner_chain_has_one_term_per_changed_input_in_the_sum_over_inputs_order():
    p = planned(CHAIN, SCHEMAS)
    terms = join_delta_terms(renderer_for(p, {"a", "b", "c"}, SCHEMAS))
    assert [t.versions for t in terms] == [
        {0: DELTA, 1: OLD, 2: OLD},
        {0: NEW, 1: DELTA, 2: OLD},
        {0: NEW, 1: NEW, 2: DELTA},
    ]
    assert all(not t.padded and t.sign == 1 for t in terms)


@pytest.mark.parametrize(("changed", "delta_input"), [({"a"}, 0), ({"b"}, 1), ({"c"}, 2)])
def test_an_unchanged_input_gives_no_term(changed: set[str], delta_input: int):
    p = planned(CHAIN, SCHEMAS)
    terms = join_delta_terms(renderer_for(p, changed, SCHEMAS))
    assert [t.delta_input for t in terms] == [delta_input]


@pytest.mark.parametrize(("changed", "delta_input"), [("a", 0), ("b", 1)])
def test_a_left_join_adds_the_padded_rows_of_the_affected_keys_new_minus_old(
    changed: str, delta_input: int
):
    """Either side's change: the inner term, then per join key the change touches, the
    NULL-padded rows of the chain at its new version (+) less those at its old version (-)."""
    p = planned("select a.k, x, y from a left join b on a.k = b.k", SCHEMAS)
    terms = join_delta_terms(renderer_for(p, {changed}, SCHEMAS))
    inner, plus, minus = terms
    assert (inner.delta_input, inner.padded) == (delta_input, frozenset())
    assert (plus.base, plus.padded, plus.sign) == (Prefix(0, NEW), frozenset({1}), 1)
    assert (minus.base, minus.padded, minus.sign) == (Prefix(0, OLD), frozenset({1}), -1)
    for pad in (plus, minus):  # the keys of the change, where the left row has no match
        keys, *rest = (f.sql("spark") for f in pad.filters)
        assert keys.startswith("EXISTS(") and f"FROM `log_{changed}`" in keys, keys
        assert any(f.startswith("NOT EXISTS(") for f in rest), rest


def test_a_grouped_merge_deletes_groups_at_count_zero_and_inserts_new_ones():
    p = planned("select k, count(*) as n, sum(x) as s from a group by k", SCHEMAS)
    merge = state_merge.merge_sql(p, "s.st", "s.d", None, META, TYPES)
    assert merge.startswith("MERGE INTO `s`.`st` AS s USING")
    assert "WHEN MATCHED AND d.__ivm_row__ = 1 THEN UPDATE SET __ivm_meta__ = d.__ivm_meta__" in (
        merge
    )
    assert "WHEN MATCHED AND d.__ivm_new_count = 0 THEN DELETE" in merge
    assert "WHEN NOT MATCHED AND d.__ivm_row__ = 0 AND d.__ivm_count__ > 0 THEN INSERT" in merge


def test_an_ungrouped_merge_only_updates_its_one_row():
    p = planned("select count(*) as n, sum(x) as s from a", SCHEMAS)
    merge = state_merge.merge_sql(p, "s.st", "s.d", None, META, TYPES)
    assert "THEN DELETE" not in merge and "INSERT" not in merge
    assert "WHEN MATCHED THEN UPDATE SET" in merge


def test_a_window_commit_swaps_the_affected_partitions_in_one_merge():
    p = planned("select k, x, row_number() over (partition by k order by x) as r from a", SCHEMAS)
    merge = window.merge_sql(p, "s.st", "s.affected", "s.recomputed", META, TYPES)
    clauses = merge[merge.index(" WHEN ") :]
    assert clauses == (
        " WHEN MATCHED AND d.__ivm_tag = 'm' THEN UPDATE SET __ivm_meta__ = d.__ivm_meta__"
        " WHEN MATCHED THEN DELETE"
        " WHEN NOT MATCHED AND d.__ivm_tag = 'i' THEN INSERT" + clauses[clauses.index(" (") :]
    )


@pytest.mark.parametrize("kind", ["grouped", "window"])
def test_a_commit_applies_only_over_the_metadata_row_it_read(kind):
    """Both MERGE builders guard their source by the row the run read its watermarks from
    (two runs of one model at once: the second applies nothing), and write the new row."""
    import hashlib

    if kind == "grouped":
        p = planned("select k, count(*) as n from a group by k", SCHEMAS)
        merge = state_merge.merge_sql(p, "s.st", "s.d", None, META, TYPES)
    else:
        p = planned("select k, x, rank() over (partition by k order by x) as r from a", SCHEMAS)
        merge = window.merge_sql(p, "s.st", "s.affected", "s.recomputed", META, TYPES)
    source = merge[: merge.index(" AS d ON ")]
    read = hashlib.sha256(META.read.encode()).hexdigest()
    guard = "WHERE EXISTS(SELECT 1 FROM `s`.`st` WHERE `__ivm_row__` = 1 AND SHA2("
    assert guard in source and f"256) = '{read}')" in source, source
    assert source.count('\'{"watermarks": {"a": 2}}\'') == 1, source
    # No other process can commit to the state (the embedded metastore): no guard.
    alone = MetaWrite(read=None, written=META.written)
    if kind == "grouped":
        unguarded = state_merge.merge_sql(p, "s.st", "s.d", None, alone, TYPES)
    else:
        unguarded = window.merge_sql(p, "s.st", "s.affected", "s.recomputed", alone, TYPES)
    assert "EXISTS" not in unguarded and "SHA2" not in unguarded, unguarded


def test_top_k_keeps_the_unlimited_result_and_limits_the_view():
    top = top_k.split("select k, sum(x) as s from a group by k order by s desc, k limit 3", "m")
    assert "LIMIT" not in top.inner.upper() and "ORDER BY" not in top.inner.upper()
    assert top.suffix == " ORDER BY `s` DESC, `k` LIMIT 3"
    assert top.limited("SELECT 1").endswith(top.suffix)
    assert top_k.split("select k from a", "m").limited("V") == "V"


def test_top_k_over_an_expression_outside_the_result_is_refused_by_name():
    with pytest.raises(UnsupportedQueryError, match="not a result column"):
        top_k.split("select k from a order by x + 1 limit 3", "m")


OUTER_SCHEMAS = {
    "s.cust": [("id", "int"), ("name", "string")],
    "s.ords": [("ok", "int"), ("cust", "int"), ("status", "string"), ("qty", "int")],
}


def _split(text: str) -> aux_state.AuxSplit:
    p = planned(text, OUTER_SCHEMAS)
    # the argument types of the aggregates, as Spark reports them (sum needs an exact type)
    typed = dataclasses.replace(p, arg_types=["int"] * len(p.query.aggregates))
    found = aux_state.split(typed)
    assert isinstance(found, aux_state.AuxSplit), found
    return found


def test_a_left_join_keeps_its_preserved_side_as_the_dimension():
    found = _split(
        "select c.id, o.status, count(*) n, count(o.qty) q, sum(o.qty) s from cust c "
        "left join ords o on o.cust = c.id and o.status <> 'X' and c.name <> 'z' "
        "group by c.id, o.status"
    )
    assert (found.dimension, found.facts) == ("s.cust", ("s.ords",))
    assert found.aux_sql == (
        "SELECT o.cust AS aux_j0, o.status AS aux_g0, COUNT(*) AS aux_x0, COUNT(o.qty) AS aux_x1, "
        "SUM(o.qty) AS aux_x2 FROM `s`.`ords` AS `o` WHERE o.status <> 'X' "
        "GROUP BY o.cust, o.status"
    )
    assert found.top_sql("SELECT * FROM a_state") == (
        "SELECT c.id AS `c0`, `__ivm_aux`.`aux_g0` AS `c1`, "
        "SUM(COALESCE(`__ivm_aux`.`aux_x0`, 1)) AS `c2`, "
        "COALESCE(SUM(`__ivm_aux`.`aux_x1`), 0) AS `c3`, "
        "CAST(SUM(`__ivm_aux`.`aux_x2`) AS BIGINT) AS `c4` "
        "FROM `s`.`cust` AS `c` LEFT JOIN (SELECT * FROM a_state) AS __ivm_aux "
        "ON `__ivm_aux`.`aux_j0` = c.id AND c.name <> 'z' GROUP BY c.id, `__ivm_aux`.`aux_g0`"
    )


STAR_SCHEMAS = {
    **OUTER_SCHEMAS,
    "s.cust": [("id", "int"), ("name", "string"), ("nation", "int"), ("seg", "string")],
    "s.nat": [("nid", "int"), ("nname", "string")],
}


def test_a_distinct_over_inner_joins_keeps_the_facts_by_join_key_and_result_columns():
    # Distinct_g(F ⋈ D) = Distinct_g'(A ⋈ D), A = the facts grouped by j and g_F, nothing
    # computed: a (j, g_F) is in A exactly when some fact row has it.
    found = aux_state.split(
        planned(
            "select distinct n.nname, c.seg, o.status from ords o "
            "join cust c on o.cust = c.id join nat n on c.nation = n.nid where o.qty > 1",
            STAR_SCHEMAS,
        )
    )
    assert isinstance(found, aux_state.AuxSplit), found
    assert (found.dimension, found.facts) == ("s.nat", ("s.ords", "s.cust"))
    assert found.aux_sql == (
        "SELECT c.nation AS aux_j0, c.seg AS aux_g0, o.status AS aux_g1 FROM `s`.`ords` AS `o` "
        "INNER JOIN `s`.`cust` AS `c` ON o.cust = c.id WHERE o.qty > 1 "
        "GROUP BY c.nation, c.seg, o.status"
    )
    assert found.top_sql("SELECT * FROM a_state") == (
        "SELECT DISTINCT n.nname AS `c0`, `__ivm_aux`.`aux_g0` AS `c1`, "
        "`__ivm_aux`.`aux_g1` AS `c2` FROM (SELECT * FROM a_state) AS __ivm_aux "
        "INNER JOIN `s`.`nat` AS `n` ON `__ivm_aux`.`aux_j0` = n.nid"
    )


def test_a_distinct_over_a_left_join_pads_where_a_has_no_row():
    # A D row without facts (or whose facts the ON rejects) meets no row of A: one padded
    # row, as in the model.
    found = _split(
        "select distinct c.id, upper(o.status) as st from cust c "
        "left join ords o on o.cust = c.id and o.qty > 0"
    )
    assert found.aux_sql == (
        "SELECT o.cust AS aux_j0, UPPER(o.status) AS aux_g0 FROM `s`.`ords` AS `o` "
        "WHERE o.qty > 0 GROUP BY o.cust, UPPER(o.status)"
    )
    assert found.top_sql("SELECT * FROM a_state") == (
        "SELECT DISTINCT c.id AS `c0`, `__ivm_aux`.`aux_g0` AS `c1` FROM `s`.`cust` AS `c` "
        "LEFT JOIN (SELECT * FROM a_state) AS __ivm_aux ON `__ivm_aux`.`aux_j0` = c.id"
    )


def test_a_distinct_column_mixing_both_sides_keeps_the_flat_plan():
    found = aux_state.split(
        planned(
            "select distinct c.seg || n.nname as both from ords o "
            "join cust c on o.cust = c.id join nat n on c.nation = n.nid",
            STAR_SCHEMAS,
        )
    )
    assert not isinstance(found, aux_state.AuxSplit)
    assert "a result column of the DISTINCT mixing both sides: c.seg || n.nname" in str(found)


def test_a_left_join_with_a_where_on_its_padded_side_keeps_the_flat_plan():
    p = planned(
        "select c.id, count(*) n from cust c left join ords o on o.cust = c.id "
        "where o.qty is null or o.qty > 1 group by c.id",
        OUTER_SCHEMAS,
    )
    found = aux_state.split(p)
    assert not isinstance(found, aux_state.AuxSplit)
    assert "WHERE condition on the padded side" in str(found)
