"""iotop_plus: a terminal UI for Linux storage."""

__version__ = "0.1.0"
