"""Differential test harness for the `ivm` materialization (see tests/README.md)."""
