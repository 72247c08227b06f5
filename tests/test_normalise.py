"""Where `normalise` puts things: dbt-style CTEs and bracketed joins flattened only where the
rewrite is exact (the differential families `cte_filtered_joins` and `cte_bracketed_left`
check the results against Spark; these check the placement rules and the refusals)."""

from __future__ import annotations

import pytest
from support.delta_sql import delta_select

from dbt.adapters.spark_ivm.compiler import dataflow
from dbt.adapters.spark_ivm.compiler.errors import UnsupportedQueryError
from dbt.adapters.spark_ivm.compiler.frontend.analyze import analyze
from dbt.adapters.spark_ivm.compiler.relations import Target

SCHEMAS = {
    "db.t": [("k", "int"), ("x", "int")],
    "db.u": [("k", "int"), ("y", "int")],
    "db.v": [("k", "int"), ("z", "int")],
}


def _shape(sql: str) -> tuple[list[str], list[tuple[str, str]], str | None]:
    q = analyze(sql, "m", SCHEMAS, "db")
    return (
        [f"{i.relation} {i.alias}" for i in q.inputs],
        [(s.kind.value, s.on.sql("spark")) for s in q.steps],
        q.where.sql("spark") if q.where is not None else None,
    )


def test_a_cte_used_twice_is_two_inputs_and_its_filter_goes_where_it_removes_the_same_rows():
    inputs, steps, where = _shape(
        "with c as (select k, x from t where x > 0) "
        "select a.k, count(b.x) as n from c a left join c b on a.k = b.k group by a.k"
    )
    assert inputs == ["db.t a", "db.t b"]
    # The null-supplied side's filter goes into its ON (a row failing it just does not
    # match); the preserved side's into WHERE (no later join pads it).
    assert steps == [("left", "a.k = b.k AND b.x > 0")]
    assert where == "a.x > 0"


def test_projections_are_substituted_with_parentheses():
    q = analyze(
        "select a.n * 2 as m from (select k, x + 1 as n from t where x > 0) a "
        "join (select k from u) b on a.k = b.k",
        "m",
        SCHEMAS,
        "db",
    )
    assert [o.sql("spark") for o in q.outputs] == ["(a.x + 1) * 2 AS m"]


@pytest.mark.parametrize(
    "sql",
    [
        # a FULL join of a filtered sub-query: no place removes exactly its rows
        "select a.k from (select k from t where x > 0) a full join u b on a.k = b.k",
        # a filtered first input that a later RIGHT join pads with NULLs
        "select a.k from (select k from t where x > 0) a right join u b on a.k = b.k",
    ],
)
def test_a_filtered_sub_query_that_no_placement_keeps_exact_is_refused(sql: str):
    with pytest.raises(UnsupportedQueryError, match="does not flatten"):
        analyze(sql, "m", SCHEMAS, "db")


def test_bracketed_joins_reassociate_where_exact_and_are_refused_by_name_otherwise():
    inputs, steps, _ = _shape(
        "select t.k from (t left join u on t.k = u.k) left join v on v.k = t.k"
    )
    assert inputs == ["db.t t", "db.u u", "db.v v"]
    assert steps == [("left", "t.k = u.k"), ("left", "v.k = t.k")]
    inputs, steps, _ = _shape("select t.k from t join (u join v on u.k = v.k) on t.k = u.k")
    # `t CROSS JOIN u JOIN v ON u.k = v.k AND t.k = u.k`, each predicate then placed at the
    # join of the last input it reads (`comma_joins.py`)
    assert steps == [("inner", "t.k = u.k"), ("inner", "u.k = v.k")]
    with pytest.raises(UnsupportedQueryError, match="outer join of a join in parentheses") as e:
        analyze(
            "select t.k from t full join (u full join v on u.k = v.k) on t.k = u.k",
            "m",
            SCHEMAS,
            "db",
        )
    assert "sub-query" not in str(e.value)


def test_an_outer_join_without_an_equality_is_refused_when_planned_not_at_a_refresh():
    from dbt.adapters.spark_ivm.compiler.plan import plan

    q = analyze("select t.k, u.y from t left join u on t.k < u.k", "m", SCHEMAS, "db")
    with pytest.raises(UnsupportedQueryError, match="LEFT JOIN without an equality"):
        plan(q, [("k", "int"), ("y", "int")], [])
    # Parentheses around the conjuncts hide no equality.
    q = analyze("select t.k, u.y from t left join u on (t.k = u.k and u.y > 0)", "m", SCHEMAS, "db")
    assert plan(q, [("k", "int"), ("y", "int")], []) is not None


@pytest.mark.parametrize(
    ("sql", "construct"),
    [
        (
            "select k from t where x not in (select y, k from u)",
            "IN with a sub-query of more than one column",
        ),
        # LIMIT/OFFSET choose some of the sub-query's rows (EXISTS .. LIMIT 1 is accepted)
        ("select k from t where x in (select y from u limit 2)", "LIMIT or OFFSET"),
        ("select k from t where x in (select y from u union select k from v)", "not one SELECT"),
        (
            "select k from t where exists (select 1 from u where u.k = t.k limit 0)",
            "OFFSET or LIMIT 0",
        ),
        (
            "select k from t where x > 1 or exists (select 1 from u where u.k = t.k)",
            "not a conjunct of WHERE",
        ),
        (
            # with an equality, comparisons are a state of outer values
            # (`theta_semi_join.py`); without one, that state would be a product
            "select k from t where exists (select 1 from u where u.k < t.k and u.y > t.x)",
            "comparisons without an equality",
        ),
        (
            (
                "select k from t where exists (select 1 from u where u.k = t.k "
                "and (u.y > t.x or t.x is null))"
            ),
            "not a NULL-strict comparison",
        ),
        (
            "select k from t where x in (select max(y) from u where u.k = t.k)",
            "over an ungrouped aggregate",
        ),
        ("select k, (select y from u where u.k = t.k) as y from t", "not one ungrouped aggregate"),
        (
            "select k, (select collect_list(y) from u where u.k = t.k) as ys from t",
            "over no rows is not NULL or 0",
        ),
    ],
)
def test_sub_query_tests_and_values_no_rule_keeps_exact_are_refused_by_name(sql, construct):
    from dbt.adapters.spark_ivm.compiler.frontend import stages

    assert stages.needed(sql)
    with pytest.raises(UnsupportedQueryError, match=construct):
        stages.prepare(sql, "m", SCHEMAS, "db")


def _cut(tree, view: str = "SELECT 1 AS k0 FROM db.v") -> tuple[list[str], str]:
    """The SELECT of each state `tree` is cut into, innermost first (`dataflow.cut`), and
    the model's SELECT, each state read through `view` (a stand-in for its view SELECT)."""
    flow = dataflow.cut(tree, Target("db", "m"), "m")
    views = dict.fromkeys(range(len(flow.states)), view)
    return [s.sql(views) for s in flow.sub_queries], flow.top.sql(views)


def test_exists_in_and_scalar_sub_queries_become_joins_with_states():
    from dbt.adapters.spark_ivm.compiler.frontend import stages

    tree = stages.prepare(
        "select t.k, (select count(*) from u where u.k = t.k) as n from t "
        "where exists (select 1 from v where v.k = t.k and v.z > 0) and t.x in (select y from u)",
        "m",
        SCHEMAS,
        "db",
    )
    bodies, model = _cut(tree)
    assert bodies == [
        "SELECT DISTINCT v.k AS k0 FROM db.v AS v WHERE v.z > 0",
        "SELECT DISTINCT u.y AS k0 FROM db.u AS u",
        "SELECT u.k AS k0, COUNT(*) AS v FROM db.u AS u GROUP BY u.k",
    ]
    assert "COALESCE(ivm_scalar0.v, 0) AS n" in model


def test_not_in_keeps_a_distinct_state_and_an_empty_or_null_flag_per_correlation_key():
    """`x NOT IN (SELECT y ..)`: a LEFT JOIN of the DISTINCT (keys, y) state says whether x
    is matched; max(CASE WHEN y IS NULL THEN 2 ELSE 1 END) per correlation key says whether
    the sub-query is empty (NULL -> 0), holds no NULL (1) or a NULL (2)."""
    from dbt.adapters.spark_ivm.compiler.frontend import stages

    tree = stages.prepare(
        "select t.k from t where t.x > 0 and t.x not in (select u.y from u where u.k = t.k)",
        "m",
        SCHEMAS,
        "db",
    )
    assert _cut(tree)[0] == [
        "SELECT DISTINCT u.k AS k0, u.y AS k1 FROM db.u AS u",
        (
            "SELECT u.k AS k0, MAX(CASE WHEN u.y IS NULL THEN 2 ELSE 1 END) AS v FROM db.u AS u "
            "GROUP BY u.k"
        ),
    ]
    where = tree.args["where"].sql("spark")
    assert where == (
        "WHERE t.x > 0 AND CASE WHEN NOT t.x IS NULL AND ivm_semi0.k0 IS NULL THEN 1 ELSE 0 "
        "END >= COALESCE(ivm_scalar0.v, 0)"
    )


def test_not_in_with_a_constant_joins_a_one_row_state():
    """`5 NOT IN (SELECT y ..)` reads no column of the outer row: whether 5 is in the
    sub-query is a one-row state, MAX(1) (NULL when it is not), joined to every row (it
    failed with a Python error, then as a LEFT JOIN without an equality)."""
    from dbt.adapters.spark_ivm.compiler.frontend import stages

    tree = stages.prepare(
        "select t.k from t where 5 not in (select u.y from u)", "m", SCHEMAS, "db"
    )
    bodies, model = _cut(tree)
    assert bodies[0] == "SELECT MAX(1) AS k0 FROM db.u AS u WHERE u.y = 5"
    assert "JOIN (SELECT 1 AS k0 FROM db.v) AS ivm_semi0 ON TRUE" in model
    assert "LEFT JOIN" not in model


def test_in_compares_a_string_with_a_number_as_text_like_spark():
    """Spark's IN casts a string and a number to STRING ('1.0' IN (SELECT 1) is false); a
    join equality would cast the string to a number ('1.0' = 1 is true). The rewrite's
    equality is the IN's; a side whose type cannot be told is refused."""
    from dbt.adapters.spark_ivm.compiler.frontend import stages

    schemas = {**SCHEMAS, "db.w": [("s", "string"), ("m", "map<string,int>")]}
    tree = stages.prepare("select w.s from w where w.s in (select u.y from u)", "m", schemas, "db")
    assert "SELECT DISTINCT CAST(u.y AS STRING) AS k0" in tree.sql("spark")
    assert "ON ivm_semi0.k0 = CAST(w.s AS STRING)" in tree.sql("spark")
    same = stages.prepare("select t.k from t where t.x in (select u.y from u)", "m", schemas, "db")
    assert "CAST" not in same.sql("spark")
    with pytest.raises(UnsupportedQueryError, match="compared types cannot be told"):
        stages.prepare(
            "select t.k from t where t.x in (select w.m['a'] from w)", "m", schemas, "db"
        )


@pytest.mark.parametrize(
    ("where", "kind"),
    [
        ("b.y > 3", "inner"),  # a comparison is NULL on a padded row
        ("a.x < 0.5 * b.y + 10 AND a.x > 0", "inner"),  # one conjunct suffices
        ("COALESCE(b.y <> a.x OR b.y > 1, FALSE)", "inner"),  # EXISTS with a comparison
        ("CASE WHEN a.x > 0 THEN b.y END = 2", "inner"),  # every result NULL
        ("NOT COALESCE(b.y > a.x, FALSE)", "left"),  # NOT EXISTS: TRUE on a padded row
        ("b.y > 3 OR a.x > 0", "left"),  # one disjunct keeps padded rows
        ("b.y IS NOT NULL", "inner"),  # FALSE on a padded row
        ("b.y IS NULL", "left"),
        ("b.y <=> 3", "left"),  # null-safe: never NULL
        ("CASE WHEN a.x > 0 THEN b.y ELSE 1 END = 2", "left"),
    ],
)
def test_a_left_join_whose_padded_rows_the_where_drops_is_an_inner_join(where: str, kind: str):
    _, steps, _ = _shape(f"select a.k, b.y from t a left join u b on a.k = b.k where {where}")
    assert steps[0][0] == kind


@pytest.mark.parametrize(
    ("join", "where", "kind"),
    [
        ("full", "b.y > 3", "right"),  # the left-preserved rows (b padded) go
        ("full", "a.x > 3", "left"),  # the right-preserved rows (a padded) go
        ("full", "a.x > 3 AND b.y > 3", "inner"),
        ("full", "a.x > 3 OR b.y > 3", "full"),  # each disjunct keeps one padding
        ("right", "a.x > 3", "inner"),  # its padded rows have a NULL
        ("right", "b.y > 3", "right"),  # b is never padded by it
        ("right", "a.x IS NULL", "right"),
    ],
)
def test_a_full_or_right_join_drops_the_padding_the_where_rejects(join: str, where: str, kind: str):
    _, steps, _ = _shape(f"select a.k, b.y from t a {join} join u b on a.k = b.k where {where}")
    assert steps[0][0] == kind


def test_a_right_join_is_inner_when_the_where_rejects_any_input_before_it():
    _, steps, _ = _shape(
        "select a.k, c.z from t a join u b on a.k = b.k right join v c on c.k = a.k where b.y > 0"
    )
    assert [s[0] for s in steps] == ["inner", "inner"]


def test_exists_and_scalar_comparisons_join_their_states_inner_not_exists_left():
    from dbt.adapters.spark_ivm.compiler.frontend import stages

    tree = stages.prepare(
        "select a.k from t a where exists (select 1 from u b where b.k = a.k and b.y <> a.x) "
        "and not exists (select 1 from v c where c.k = a.k and c.z > a.x) "
        "and a.x < (select 0.5 * avg(d.y) from u d where d.k = a.k)",
        "m",
        SCHEMAS,
        "db",
    )
    _, model = _cut(tree, "SELECT k AS k0, y AS v, y AS v1 FROM db.u")  # stand-in states
    q = analyze(model, "m", SCHEMAS, "db")
    assert [(s.kind.value, q.inputs[s.index].alias) for s in q.steps] == [
        ("inner", "ivm_scalar0"),  # EXISTS
        ("inner", "ivm_scalar1"),  # the scalar sub-query
        ("left", "ivm_scalar2"),  # NOT EXISTS
    ]


def test_relations_of_other_catalogs_are_inputs_of_their_own_and_read_there():
    """A model may read tables of several catalogs (issue 38): `db.t` of the current one and
    `db.t` of `lake` are two relations, and the delta reads each in its catalog."""
    schemas = {
        "s.a": [("k", "int"), ("x", "int")],
        "lake.s.a": [("k", "int"), ("y", "int")],
        "files.raw.c": [("k", "int"), ("z", "int")],
    }
    text = (
        "with f as (select k, z from files.raw.c where z > 0) "
        "select a.k, sum(x) as sx, max(b.y) as my, count(*) as n "
        "from a join lake.s.a b on a.k = b.k join f on f.k = a.k group by a.k"
    )
    q = analyze(text, "m", schemas, "s")
    assert [f"{i.relation} {i.alias}" for i in q.inputs] == ["s.a a", "lake.s.a b", "files.raw.c f"]
    assert [c for i in q.inputs for c, _ in i.columns] == ["k", "x", "k", "y", "k", "z"]
    delta = delta_select(text, schemas, {"lake.s.a", "files.raw.c"}).sql("spark")
    assert "`lake`.`s`.`a` VERSION AS OF 2" in delta, delta
    assert "`files`.`raw`.`c` VERSION AS OF 1" in delta, delta
    assert "`s`.`a` VERSION AS OF 2" in delta, delta
    assert "log_lake_s_a" in delta and "log_files_raw_c" in delta, delta
    assert "__ivm_here__" not in delta, delta
