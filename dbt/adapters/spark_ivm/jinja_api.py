"""Placeholder: the @available methods the ivm macros call (owned by the compiler author)."""


class IvmJinjaApi:
    """Mixin for SparkIvmAdapter exposing the ivm compiler to Jinja."""
