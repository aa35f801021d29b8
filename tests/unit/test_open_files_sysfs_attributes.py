"""Small attribute files kept open the sampler's way (the path alone says which file, as for a
loop device's ``diskseq``): opened once, read again with one ``pread`` (their current text),
refused when not a regular file (by the caller's checked read), closed once a sweep finds them
not read, never more than the limit kept."""

from __future__ import annotations

import errno
import os
from functools import partial
from pathlib import Path

import pytest

from iotop_plus.sampling.open_files import OpenFiles
from iotop_plus.sysfs import MAX_ATTRIBUTE_BYTES, read_bounded
from tests.support.opens import counting_opens

_read = partial(read_bounded, limit=MAX_ATTRIBUTE_BYTES)


def test_a_file_is_opened_once_and_read_again_as_it_is_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seq = tmp_path / "diskseq"
    seq.write_text("41\n")
    kept = OpenFiles(_read)
    opened = counting_opens(monkeypatch)
    assert kept.read(str(seq)) == "41\n"
    with open(seq, "r+") as fh:  # rewritten in place, as sysfs gives a new value
        fh.write("42\n")
    assert kept.read(str(seq)) == "42\n"
    assert kept.read(str(seq)) == "42\n"
    assert opened == [str(seq)] and len(kept) == 1
    kept.sweep()  # read since the last sweep: kept
    kept.sweep()  # not read since: closed
    assert len(kept) == 0
    assert kept.read(str(seq)) == "42\n" and len(opened) == 2


def test_a_fifo_is_refused_and_a_missing_file_raises(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    kept = OpenFiles(_read)
    with pytest.raises(OSError) as refused:
        kept.read(str(fifo))
    assert refused.value.errno == errno.EINVAL and len(kept) == 0
    with pytest.raises(FileNotFoundError):
        kept.read(str(tmp_path / "gone"))


def test_no_more_than_the_limit_is_kept(tmp_path: Path) -> None:
    kept = OpenFiles(_read, limit=2)
    for i in range(4):
        path = tmp_path / f"f{i}"
        path.write_text(str(i))
        assert kept.read(str(path)) == str(i)
    assert len(kept) == 2
    kept.close()
    assert len(kept) == 0
