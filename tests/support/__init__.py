"""Helpers the tests share (one place for each, instead of a copy per test module)."""
