"""fio probes: targets and their safety checks, the runner, A/B runs and sweeps."""
