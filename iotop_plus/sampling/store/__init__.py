"""Frames kept over time: the in-memory ring, packed frames, timelines, chart history."""
