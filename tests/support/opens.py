"""Counting the files a piece of code opens (``os.open``), for tests about files kept open."""

from __future__ import annotations

import os

import pytest


def counting_opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """From now until ``monkeypatch`` is undone, each path given to ``os.open``, in order."""
    opened: list[str] = []
    real = os.open

    def counted(path: str, *args: object, **kwargs: object) -> int:
        opened.append(str(path))
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", counted)
    return opened
