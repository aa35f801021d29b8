"""The engine's own tests run with the engine on (``engine_mode`` runs one both ways), even in
a lane run on stock Textual (``IOTOP_PLUS_STOCK_TEXTUAL=1``)."""

from __future__ import annotations

import pytest

from iotop_plus.tui.engine.testing import switch


@pytest.fixture(autouse=True)
def _engine_on(monkeypatch: pytest.MonkeyPatch) -> None:
    switch(monkeypatch, stock=False)
