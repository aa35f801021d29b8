"""Frames kept over time: the timelines (their protocol, the chart columns and marks) and
the join of a recording before the frame store."""
