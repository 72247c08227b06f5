"""runtime: the refresh of a model, speaking SQL to Spark: facts read before any change, change logs, the commit, upkeep, explain."""
