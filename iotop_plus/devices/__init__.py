"""Queue settings: what each one means, the tuner that writes them and its journal."""
