"""Which block devices exist, their names and how they stack (the readers' common ground)."""
