"""Run as ``python -m iotop_plus``."""

from iotop_plus.cli import main

raise SystemExit(main())
