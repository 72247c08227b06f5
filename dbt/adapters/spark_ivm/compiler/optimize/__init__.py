"""optimize: rewrites that make a refresh cheaper without changing its result (key pruning, factored terms, auxiliary states)."""
