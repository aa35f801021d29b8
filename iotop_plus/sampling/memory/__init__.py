"""Dirty and writeback memory."""
