"""The ivm benchmark (issue 5): see bench/README.md; run with `python -m bench.run`."""
