"""canonical: a model's SQL as one canonical string, what its state's digest is taken of.

A state records the digest of the SQL it was built from, and a run whose SQL has another
digest rebuilds the state. Taken of the raw text, a comment, a line break or a keyword's case
rebuilt the model. The compiler maintains the model from sqlglot's parse of its SQL, so two
texts with the same parse are the same model to it: the digest is taken of that parse
rendered again in Spark's dialect, without comments, with sqlglot's spacing and keyword case.
Identifiers and literals are rendered as written (a quoted `K` is not `k`, `'A'` not `'a'`).

    >>> canonical_sql("select k, sum(x) s -- total\\nfrom   db.t /* base */ GROUP BY k")
    'SELECT k, SUM(x) AS s FROM db.t GROUP BY k'
    >>> canonical_sql("SELECT `K` FROM db.t WHERE s = 'A b'")
    "SELECT `K` FROM db.t WHERE s = 'A b'"
    >>> canonical_sql("select from (((") is None  # sqlglot cannot parse it: no canonical form
    True
"""

from __future__ import annotations

import sqlglot
from sqlglot.errors import SqlglotError

from dbt.adapters.spark_ivm.compiler.sql.dialect import DIALECT


def comparable_sql(text: str) -> str:
    """What two SQL texts are compared by: the canonical form, the trimmed text where
    sqlglot cannot parse it.

    >>> comparable_sql("select k  from db.t -- keys"), comparable_sql(" select from ((( ")
    ('SELECT k FROM db.t', 'select from (((')
    """
    found = canonical_sql(text)
    return text.strip() if found is None else found


def canonical_sql(text: str) -> str | None:
    """`text` parsed by sqlglot in Spark's dialect and rendered again without comments
    (statements joined by `; `); None when sqlglot cannot parse it."""
    try:
        trees = [t for t in sqlglot.parse(text, dialect=DIALECT) if t is not None]
        rendered = [t.sql(dialect=DIALECT, comments=False) for t in trees]
    except (SqlglotError, RecursionError):
        return None
    return "; ".join(rendered) if rendered else None
