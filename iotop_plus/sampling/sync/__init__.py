"""fsync and fdatasync times, and the jbd2 journal's commits."""
