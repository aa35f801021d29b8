"""The Prometheus side: the collector and exposition of ``serve``, and the fleet client.

Layering: this package reads frames (``sampling``), queue settings (``devices``) and the state
directory (``state``); it never imports ``textual`` or ``rich``.
"""
