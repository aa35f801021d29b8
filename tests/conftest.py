"""Shared fixtures: fixture trees and real loop devices."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from iotop_plus.roots import Roots
from tests.support.loopdev import loop_device

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def fixture_roots() -> Callable[[str], Roots]:
    """Roots of a captured tree under tests/fixtures/NAME (with proc/ and sys/)."""

    def make(name: str) -> Roots:
        base = FIXTURES / name
        return Roots(proc=base / "proc", sys=base / "sys")

    return make


@pytest.fixture
def make_loop(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """Factory for real loop devices, all detached at the end of the test."""
    with ExitStack() as stack:
        counter = iter(range(1000))

        def make(size_mb: int = 64, direct_io: bool = False, filled: bool = False) -> str:
            name = f"backing{next(counter)}.img"
            return stack.enter_context(loop_device(tmp_path, size_mb, name, direct_io, filled))

        yield make


@pytest.fixture
def fio_bin() -> str:
    """Path of fio; skips with the reason when it is not installed."""
    path = shutil.which("fio")
    if path is None:
        pytest.skip("fio is not installed (make test installs it when run as root)")
    return path
