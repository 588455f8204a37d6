"""The distribution's version: pyproject.toml reads it from here, and the gateway's client reports it."""

__version__ = "0.1.0"
