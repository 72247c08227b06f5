"""front end: a model's SELECT -> the IR (analysis, normalising rewrites, views, sub-query states)."""
