"""Failures get one plain line and leave nothing behind.

Fake fio scripts are used only to produce failures real fio cannot be made to produce here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from iotop_plus.probe.presets import PRESETS
from iotop_plus.probe.run_types import ProbeError, ProbeRequest
from iotop_plus.probe.runner import ProbeRunner
from iotop_plus.programs import search_path_override
from iotop_plus.roots import Roots
from tests.support.nobody import nobody_directory, nobody_env, nobody_python


def _request(target: Path, preset: str = "randread", **changes: object) -> ProbeRequest:
    p = PRESETS[preset]
    params = replace(p.params, runtime_s=1, size_mb=32, **changes)  # type: ignore[arg-type]
    return ProbeRequest(p, params, str(target))


def _fake_fio(directory: Path, body: str) -> Path:
    directory.mkdir(exist_ok=True)
    path = directory / "fio"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


@pytest.fixture
def target(tmp_path: Path) -> Path:
    path = tmp_path / "target"
    path.mkdir()
    return path


def test_fio_missing_from_path_names_the_install_command() -> None:
    # As root PATH is not used (iotop_plus.programs), so a plain user plays this one.
    python = nobody_python()
    with nobody_directory() as target:
        empty = target / "empty-bin"
        empty.mkdir()
        proc = subprocess.run(
            [*python, "-m", "iotop_plus", "probe", "wal", "-t", "/tmp", "-r", "1"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=nobody_env(str(empty)),
            cwd="/",
        )
        assert proc.returncode == 1
        assert proc.stderr == (
            f"iotop-plus: probe failed: fio is not installed (looked in {empty}): "
            "install it with `apt-get install fio` (Debian/Ubuntu) or `dnf install fio`\n"
        )
    assert not [p for p in Path("/tmp").iterdir() if p.name.startswith(".iotop-plus-")]


async def test_fio_missing_from_the_search_path_says_where_it_looked(target: Path) -> None:
    empty = target.parent / "empty-bin"
    empty.mkdir()
    with (
        search_path_override([str(empty)]),
        pytest.raises(ProbeError, match=f"fio is not installed \\(looked in {empty}"),
    ):
        await ProbeRunner(Roots()).run(_request(target))
    assert list(target.iterdir()) == []


async def test_garbage_output_is_a_plain_error(target: Path) -> None:
    fio = _fake_fio(target.parent / "bin", 'echo "Segmentation fault"\necho "{\\"jobs\\": [garb"\n')
    with pytest.raises(ProbeError, match="printed no JSON result") as info:
        await ProbeRunner(Roots(), str(fio)).run(_request(target))
    assert "Segmentation fault" in str(info.value) and "\n" not in str(info.value)
    assert list(target.iterdir()) == []


async def test_exit_1_after_text_quotes_fio(target: Path) -> None:
    fio = _fake_fio(
        target.parent / "bin",
        'echo "note: something odd"\necho "fio: bad option --x" >&2\nexit 1\n',
    )
    with pytest.raises(ProbeError, match="exited with status 1") as info:
        await ProbeRunner(Roots(), str(fio)).run(_request(target))
    assert "fio: bad option --x" in str(info.value)
    assert list(target.iterdir()) == []


async def test_a_job_error_in_valid_json_is_reported_with_its_meaning(target: Path) -> None:
    doc = {"fio version": "fio-3.33", "jobs": [{"jobname": "randread", "error": 28}]}
    fio = _fake_fio(
        target.parent / "bin",
        "echo 'fio: pid=1, err=28/file:io_u.c:1845, func=io_u error, error=No space left on "
        f"device'\ncat <<'EOF'\n{json.dumps(doc)}\nEOF\nexit 1\n",
    )
    with pytest.raises(ProbeError, match="No space left on device") as info:
        await ProbeRunner(Roots(), str(fio)).run(_request(target))
    assert "errno 28" in str(info.value)
    assert list(target.iterdir()) == []


async def test_an_unsupported_engine_is_a_plain_error(target: Path, fio_bin: str) -> None:
    with pytest.raises(ProbeError, match="fio has no I/O engine 'nosuchengine'"):
        await ProbeRunner(Roots(), fio_bin).run(_request(target, ioengine="nosuchengine"))
    assert list(target.iterdir()) == []


def test_an_unsupported_engine_from_the_cli(target: Path, fio_bin: str) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "iotop_plus",
            "probe",
            "randread",
            "-t",
            str(target),
            "-r",
            "1",
            "--set",
            "size=32",
            "--set",
            "ioengine=nosuchengine",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    assert "fio has no I/O engine 'nosuchengine'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_parameters_are_usage_errors(target: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "iotop_plus", "probe", "wal", "-t", str(target), "--set", "bs=4q"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == "iotop-plus: error: bs: not a block size like 4k or 1m: '4q'"


async def test_io_uring_refused_by_fio_falls_back_to_libaio(target: Path, fio_bin: str) -> None:
    # A double that fails the way fio does when io_uring_setup gives EPERM, and runs the
    # real fio for any other engine.
    fio = _fake_fio(
        target.parent / "bin",
        'case "$*" in *--ioengine=io_uring*)\n'
        "  echo 'fio: pid=9, err=1/file:engines/io_uring.c:998, func=io_queue_init, "
        "error=Operation not permitted'\n  exit 1;;\nesac\n"
        f'exec {fio_bin} "$@"\n',
    )
    outcome = await ProbeRunner(Roots(), str(fio)).run(_request(target))
    assert outcome.result.params.ioengine == "libaio"
    assert any("fell back to libaio" in n for n in outcome.result.notes)
    assert outcome.result.iops > 0
    assert list(target.iterdir()) == []
