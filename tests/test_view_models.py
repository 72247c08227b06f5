"""dbt-spark's `view` materialization on the embedded catalog: a changed view model shows its new
SQL (Iceberg's session catalog keeps the old text on CREATE OR REPLACE VIEW; the plugin drops
the view first)."""

from __future__ import annotations

import pytest
from support.small_project import SmallProject

SCHEMA = "ivm_views"


def test_changed_view_model_shows_new_sql(tmp_path_factory: pytest.TempPathFactory) -> None:
    p = SmallProject(tmp_path_factory.mktemp("views"), "views", SCHEMA)
    model = p.root / "models" / "v.sql"
    for value in (1, 2, 3):
        model.write_text(f"{{{{ config(materialized='view') }}}}\nselect {value} as v")
        assert p.dbt("run").success
        assert p.sql(f"SELECT v FROM {SCHEMA}.v") == [(value,)]
