"""Recordings: the always-on recorder's file format, writer and reader (replay, bundles).

``docs/recording-format.md`` documents the format; :mod:`iotop_plus.record.format` is its one
implementation.
"""
