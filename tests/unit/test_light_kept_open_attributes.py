"""Small attribute files kept open: opened once, read again with one ``pread`` (their current
text), refused when not a regular file, closed when their name goes, never more than the
limit kept."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from iotop_plus.sampling.disks.kept_open import KeptOpen


def _counting_opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    opened: list[str] = []
    real = os.open

    def counted(path: str, *args: object, **kwargs: object) -> int:
        opened.append(str(path))
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", counted)
    return opened


def test_a_file_is_opened_once_and_read_again_as_it_is_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seq = tmp_path / "diskseq"
    seq.write_text("41\n")
    kept = KeptOpen()
    opened = _counting_opens(monkeypatch)
    assert kept.read(str(seq)) == "41\n"
    with open(seq, "r+") as fh:  # rewritten in place, as sysfs gives a new value
        fh.write("42\n")
    assert kept.read(str(seq)) == "42\n"
    assert kept.read(str(seq)) == "42\n"
    assert opened == [str(seq)] and len(kept) == 1
    kept.keep_only(set())
    assert len(kept) == 0
    assert kept.read(str(seq)) == "42\n" and len(opened) == 2


def test_a_fifo_is_refused_and_a_missing_file_raises(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    kept = KeptOpen()
    with pytest.raises(OSError) as refused:
        kept.read(str(fifo))
    assert refused.value.errno == errno.EINVAL and len(kept) == 0
    with pytest.raises(FileNotFoundError):
        kept.read(str(tmp_path / "gone"))


def test_no_more_than_the_limit_is_kept(tmp_path: Path) -> None:
    kept = KeptOpen()
    kept.limit = 2
    for i in range(4):
        path = tmp_path / f"f{i}"
        path.write_text(str(i))
        assert kept.read(str(path)) == str(i)
    assert len(kept) == 2
    kept.close()
    assert len(kept) == 0
