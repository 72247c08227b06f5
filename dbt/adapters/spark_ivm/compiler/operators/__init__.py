"""operators: the state and delta rule of each operator family (aggregates, joins, outer joins, set operations, windows, top-k, bags) and the MERGE that folds a delta into a state."""
