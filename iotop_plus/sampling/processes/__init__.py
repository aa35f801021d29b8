"""Per-process I/O: reading /proc, rates and totals, and who issues each device's requests."""
