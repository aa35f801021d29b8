"""Threads stuck in uninterruptible sleep, and on what."""
