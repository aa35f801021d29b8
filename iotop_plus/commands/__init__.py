"""Headless subcommands. Each module offers ``add_parser(subparsers)`` and ``run``."""
