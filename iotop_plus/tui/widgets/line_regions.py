"""Which regions a Line-API widget asks Textual to repaint for its changed lines."""

from __future__ import annotations

from collections.abc import Sequence

from textual.geometry import Region


def line_regions(lines: Sequence[int], width: int) -> list[Region]:
    """The regions to repaint for the changed ``lines`` (in increasing order), adjacent
    lines merged into one region: a frame that redraws a chart's eight plot rows asks for one
    region, not eight (each is translated and kept apart by Textual)."""
    regions: list[Region] = []
    start = prev = -2
    for y in lines:
        if y != prev + 1:
            if start >= 0:
                regions.append(Region(0, start, width, prev - start + 1))
            start = y
        prev = y
    if start >= 0:
        regions.append(Region(0, start, width, prev - start + 1))
    return regions
