"""front end: a model's SELECT -> the IR (dialect, analysis, normalising rewrites, views, sub-query states)."""
