"""The query families of the differential test, by construct.

To add a family, append one `Family(...)` to the list of its construct's module: a name (the
model name and pytest id), the tables it reads (`tables.py`), and the SELECT, which references
base tables as `{{ source('base', '<table>') }}`. Reuse a table or declare a new one (a new
name); tables are shared by every family that lists them. `FAMILIES` keeps the order the
harness has always run them in.
"""

from __future__ import annotations

from ..spec import Family
from .aggregates import AGGREGATES
from .dag import DAG
from .joins import JOINS
from .set_operations import SET_OPERATIONS
from .subqueries import SUBQUERIES
from .windows import WINDOWS

FAMILIES: list[Family] = [
    *AGGREGATES,
    *JOINS,
    *SUBQUERIES,
    *DAG,
    *WINDOWS,
    *SET_OPERATIONS,
]
