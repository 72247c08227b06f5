"""bag_input: reading a state that keeps a bag of rows (a weighted input).

A state of the bag shape (UNION ALL, INTERSECT ALL, EXCEPT ALL, or a plain SELECT) stores
each distinct row once with its number of copies n (`__ivm_count__`, or an expression of its
counts); its view repeats the row n times:

    SELECT .. FROM x__ivm_state LATERAL VIEW EXPLODE(ARRAY_REPEAT(0, CAST(n AS INT))) ..

A model (or a sub-query stage's parent) that reads such a view reads the state table as an
ordinary input whose every version is repeated the same way, and so is its change log:

    leaf(v)  = the state at v, each row repeated n times
    dleaf    = the log of the state, each logged row (weight w, copies n) repeated n times

The log of a state is the keyed version diff of its rows (`capture`), which carries n: an
update of a row's count from 2 to 3 is the row (k, 2) with weight -1 and (k, 3) with +1,
repeated: two copies of k at -1 and three at +1, which compaction sums to one insert of k.
Every rule downstream (joins, outer padding, aggregates, MIN/MAX, windows) then reads plain
rows, as it does from the view. A row with n <= 0 is not shown (ARRAY_REPEAT of a
non-positive count is empty), as in the view.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from dbt.adapters.spark_ivm.compiler.relations import STATE_SUFFIX
from dbt.adapters.spark_ivm.compiler.sql.templates import template

_REPEATED = "__ivm_b"


def _copies(lateral: exp.Lateral) -> exp.Expression | None:
    """n of `LATERAL VIEW EXPLODE(ARRAY_REPEAT(0, CAST(n AS INT)))`, else None."""
    explode = lateral.this
    if not lateral.args.get("view") or not isinstance(explode, exp.Explode):
        return None
    repeat = explode.this
    if not isinstance(repeat, exp.Anonymous) or repeat.name.lower() != "array_repeat":
        return None
    if len(repeat.expressions) != 2:
        return None
    count = repeat.expressions[1]
    return count.this if isinstance(count, (exp.Cast, exp.TryCast)) else None


def strip_bag_views(
    tree: exp.Expression, relation_key: Callable[[exp.Table], str]
) -> dict[str, exp.Expression]:
    """Remove the repeat of every bag state's view that `tree` reads (in place) and return
    each such state relation with its copies n (over the state's own columns).

    Example: `select u.k, count(*) from (select cast(__ivm_k0 as string) as k from
    db.up__ivm_state lateral view explode(array_repeat(0, cast(__ivm_count__ as int)))
    r as i where __ivm_row__ = 0) u group by u.k` -> the same without the LATERAL VIEW, and
    {"db.up__ivm_state": __ivm_count__}.
    """
    weights: dict[str, exp.Expression] = {}
    repeats: dict[str, list[exp.Lateral]] = {}
    for lateral in list(tree.find_all(exp.Lateral)):
        select = lateral.parent
        source = select.args.get("from_") if isinstance(select, exp.Select) else None
        if source is None or not isinstance(source.this, exp.Table):
            continue
        if not source.this.name.lower().endswith(STATE_SUFFIX) or select.args.get("joins"):
            continue
        copies = _copies(lateral)
        if copies is None:
            continue
        relation = relation_key(source.this)
        if relation in weights and weights[relation] != copies:
            weights[relation] = exp.null()  # two readings that disagree: left for the refusal
            continue
        weights.setdefault(relation, copies.copy())
        repeats.setdefault(relation, []).append(lateral)
    readings = [relation_key(t) for t in tree.find_all(exp.Table) if t.name]
    for relation in list(weights):
        # The repeat holds for every reading of the state or for none: an input is rendered
        # by its relation, and a reading without the repeat would be repeated too.
        if isinstance(weights[relation], exp.Null) or readings.count(relation) != len(
            repeats[relation]
        ):
            del weights[relation]
            continue
        for lateral in repeats[relation]:
            lateral.pop()
    return weights


def repeat_lateral(copies: exp.Expression) -> exp.Lateral:
    """`LATERAL VIEW EXPLODE(ARRAY_REPEAT(0, CAST(copies AS INT))) __ivm_rep AS __ivm_i`: the
    repeat of a bag state's view (`render.view_select`), which `strip_bag_views` reads back."""
    return exp.Lateral(
        this=template("EXPLODE(ARRAY_REPEAT(0, CAST(:c AS INT)))", c=copies),
        view=True,
        alias=exp.TableAlias(
            this=exp.to_identifier("__ivm_rep"), columns=[exp.to_identifier("__ivm_i")]
        ),
    )


def repeated(body: exp.Expression, copies: exp.Expression) -> exp.Expression:
    """A leaf (`body`: a table or a sub-query of a state's rows, or of its log) with every
    row repeated `copies` times: the rows the state's view shows.

    >>> sql = repeated(exp.to_table("db.s__ivm_state"), exp.column("__ivm_count__")).sql("spark")
    >>> print(sql.replace(" LATERAL", "\\nLATERAL").replace(" __ivm_rep", "\\n__ivm_rep"))
    (SELECT __ivm_b.* FROM (SELECT * FROM db.s__ivm_state) AS __ivm_b
    LATERAL VIEW EXPLODE(ARRAY_REPEAT(0, CAST(`__ivm_b`.`__ivm_count__` AS INT)))
    __ivm_rep AS __ivm_i)
    """
    lateral = repeat_lateral(_qualified(copies))
    source = (
        body
        if isinstance(body, exp.Subquery)
        else exp.Subquery(this=exp.Select().select(exp.Star()).from_(body))
    )
    select = (
        exp.Select()
        .select(exp.Column(this=exp.Star(), table=exp.to_identifier(_REPEATED)))
        .from_(exp.alias_(source, _REPEATED, table=True))
    )
    return exp.Subquery(this=select.lateral(lateral))


def _qualified(copies: exp.Expression) -> exp.Expression:
    """`copies` with its columns read from the repeated leaf."""

    def sub(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column):
            return exp.column(node.name, _REPEATED, quoted=True)
        return node

    return copies.copy().transform(sub, copy=False)
