"""Device health (smartctl, sysfs) and the kernel's failed requests."""
