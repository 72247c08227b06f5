"""sql: SQL building blocks shared by every layer (templates filled with ASTs, the equality test's SQL)."""
