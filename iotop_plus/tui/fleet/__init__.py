"""``iotop-plus fleet``: many hosts' disks through Prometheus (loaded only by that command)."""
