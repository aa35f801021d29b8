"""Per-device I/O counters and iostat -x figures, and the queue settings."""
