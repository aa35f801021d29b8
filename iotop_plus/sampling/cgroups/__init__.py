"""Per-cgroup I/O, pressure and limits, v1 and v2."""
