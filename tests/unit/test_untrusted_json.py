"""JSON from a recording costs time in proportion to its size, whatever its bytes.

The depth check before ``json.loads`` strips strings; a pattern that must find each string's
closing quote re-scans the rest of the data from every quote of an unterminated string, so
65 brackets and an unterminated run of ``\\"`` froze a reader for hours. The crafted input is
timed against a control of the same size and kind (a valid document of as many strings)
in one child process, so a busy host slows both alike; the child is killed at a generous
deadline, so a quadratic check fails the test instead of hanging it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from iotop_plus.record.format import MAX_JSON_DEPTH, json_depth, load_json

REPO = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, sys, time
from iotop_plus.record.format import load_json

n = 500_000  # about 1 MB
crafted = {
    "escapes": b"[" * 65 + b'"' + b'\\"' * n,
    "quotes": b"[" * 65 + b'"' * (2 * n),
    "backslash_end": b"{" * 65 + b'"' + b"a" * (2 * n) + b"\\",
    "nested_unterminated": (b'[' * 65 + b'"\\"') * (n // 35),
}
# A valid document of the same size, strings and brackets, that the depth check reads too.
control = b"[" * 64 + b'"",[],' * (n // 3) + b'""' + b"]" * 64


def timed(data):
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        try:
            load_json(data)
        except ValueError:
            pass
        best = min(best, time.perf_counter() - t)
    return best


out = {"control": timed(control)}
for name, data in crafted.items():
    assert 0.9e6 < len(data) < 1.1e6, (name, len(data))
    out[name] = timed(data)
print(json.dumps(out))
"""


def test_crafted_megabyte_json_reads_in_time_proportional_to_its_size() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD],
        capture_output=True,
        text=True,
        timeout=60,  # the quadratic check takes hours on these
        cwd=REPO,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    times = json.loads(proc.stdout)
    control = max(times.pop("control"), 1e-3)
    for name, took in times.items():
        assert took < 20 * control, f"{name}: {took:.3f} s against {control:.3f} s for the control"


def test_depth_check_sees_through_strings() -> None:
    assert json_depth(b'[["[[[[", "\\"[[["], {"a": [1]}]') == 3
    assert json_depth(b"[" * 10_000) == 10_000 > MAX_JSON_DEPTH
    assert json_depth(b'["\\\\\\"[", [[]]]') == 3  # an escaped backslash, then a quote
    assert load_json(b"[" * 64 + b'"]]]\\"' + b'"' + b"]" * 64) is not None
    with pytest.raises(ValueError, match="nested deeper"):
        load_json(b"[" * 65 + b"]" * 65)
    with pytest.raises(ValueError, match="nested deeper"):
        load_json(b"[" * 65 + b'"' + b'\\"' * 1000)


def test_only_utf8_is_taken() -> None:
    # json.loads(bytes) would read this as UTF-16, whose brackets the depth check cannot see.
    with pytest.raises(ValueError):
        load_json(json.dumps([[1]]).encode("utf-16-le"))
    assert load_json('["ü", "\\ud800"]'.encode()) == ["ü", "\ud800"]


def test_the_depth_check_takes_memory_in_proportion_too() -> None:
    """16 MiB of escaped quotes: the check copies the data once or twice, never a piece per
    escape (a regex substitution over 8 million escapes listed them: about 600 MB)."""
    data = b"[" * 65 + b'"' + b'\\"' * (8 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="nested deeper"):
            load_json(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * len(data), f"{peak >> 20} MiB for {len(data) >> 20} MiB"
