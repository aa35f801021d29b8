"""Reading the host into frozen frames: disks, rates, processes, cgroups, latency, schedule."""
