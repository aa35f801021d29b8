"""The frame: its frozen model, the part protocol and registry, and the live source."""
