"""A fuzz of version-4 recordings' frame parts, shared by ``scripts/fuzz_recordings.py`` (a
timed run) and the seeded test in tests/unit/test_fuzz_parts.py.

A recording of :func:`~tests.support.hostile_parts.write_parts_recording` (every sample with
the six parts) is damaged by :func:`mutate_parts`, mostly inside the parts' JSON, and built
again with every CRC and trailer offset fixed, so the damage passes the checks. Each case goes
through the reader API as the TUI and the commands use it, and through ``snapshot --from``
and ``bundle`` in-process (:func:`check_case`).
"""

from __future__ import annotations

import io
import json
import random
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from iotop_plus.cli import main
from iotop_plus.record.format import PART_KINDS, FormatError, record
from iotop_plus.record.timeline import open_timeline
from tests.support.hostile_parts import deflate_pieces, stream_records, with_stream
from tests.support.hostile_recordings import hostile_json, mutate, parse

PARTS = sorted(PART_KINDS)

ODD_TEXT = ['"\\ud800"', '"\\udcff\\udcfe"', '"\\u001b]0;X\\u0007"', '"\\u0000"', '"\\u009b2J"',
            '"' + "x" * 3000 + '"', '"../../etc"', '""']  # fmt: skip
"""JSON strings a name could be: lone surrogates, terminal escapes, NUL, very long."""


def _leaf_paths(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in ``doc`` a value could be put (keys of objects, indexes of lists)."""
    out = [path]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _leaf_paths(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:5]):
            out += _leaf_paths(v, (*path, i))
    return out


def _hostile_value(rng: random.Random) -> Any:
    text = rng.choice([*ODD_TEXT, hostile_json(rng).decode("latin-1")])
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def _replace_at(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        return {**doc, head: _replace_at(doc[head], rest, value)}
    copy = list(doc)
    copy[head] = _replace_at(copy[head], rest, value)
    return copy


def _big_part(kind: str, rng: random.Random) -> bytes:
    """A part of many devices (up to 100,000) or deep nesting, in the part's own shape."""
    n = rng.choice([1000, 20_000, 100_000])
    if kind == "H":
        entry = {"source": "smartctl", "passed": rng.random() < 0.5, "age_s": 1.0}
        doc: Any = {"devices": {f"d{i}": entry for i in range(n)}, "grown": {}}
    elif kind == "W":
        who = [{"pid": 1, "comm": "x", "r/s": 1.0}] * rng.choice([1, 50])
        doc = {"source": "tracer", "devices": {f"d{i}": who for i in range(n // 10)}}
    elif kind == "C":
        row = {"path": "/a", "devices": {"sda": [1.0] * 6}}
        doc = {"cgroups": [{**row, "path": f"/c{i}"} for i in range(n // 10)]}
    elif kind == "N":
        doc = [{"pid": i + 1, "cmdline": "x" * 100} for i in range(n // 10)]
    elif kind == "L":
        doc = {f"/c{i}": {"8:0": {"rbps": i}} for i in range(n // 10)}
    else:
        doc = {"dirty_kB": [[[[1]]]] if rng.random() < 0.5 else 2**70}
    if rng.random() < 0.2:
        return b"[" * 65 + b'"' + b'\\"' * rng.randint(1, 50_000)
    return json.dumps(doc, separators=(",", ":")).encode()


def _mutate_part(kind: bytes, body: bytes, rng: random.Random) -> list[tuple[bytes, bytes]]:
    how = rng.randrange(8)
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        doc = None
    if how == 0 and doc is not None:  # one value anywhere replaced by a hostile one
        path = rng.choice(_leaf_paths(doc))
        text = json.dumps(_replace_at(doc, path, _hostile_value(rng)), separators=(",", ":"))
        return [(kind, text.encode())]
    if how == 1:  # bytes flipped in the JSON
        data = bytearray(body)
        for _ in range(rng.randint(1, 6)):
            if data:
                data[rng.randrange(len(data))] = rng.choice(b'[]{}",:\\0123456789 \x00\xff')
        return [(kind, bytes(data))]
    if how == 2:
        return [(kind, _big_part(kind.decode(), rng))]
    if how == 3:  # the part under another part's letter
        return [(rng.choice(PARTS).encode(), body)]
    if how == 4:  # cut short or empty
        return [(kind, body[: rng.randrange(len(body) + 1)])]
    if how == 5:  # repeated, or an unknown letter after it
        extra = rng.choice([kind, b"Z", b"\x00", b"K", b"D"])
        return [(kind, body)] * rng.randint(1, 5) + [(extra, body)]
    if how == 6:  # every string a hostile name
        text = body.decode("utf-8", "replace")
        for old in ('"fio"', '"dd"', '"sda"', '"/system.slice/a"', '"smartctl"'):
            text = text.replace(old, rng.choice(ODD_TEXT))
        return [(kind, text.encode())]
    return [(kind, hostile_json(rng))]


def mutate_parts(data: bytes, rng: random.Random) -> bytes:
    """One damaged copy of a parts recording (CRCs and trailers fixed)."""
    if rng.random() < 0.15:
        return mutate(data, rng)  # the generic damage: header, trailers, frames, bombs
    n_chunks = sum(1 for f in parse(data)[1] if f.kind == b"T")
    chunk = rng.randrange(max(1, n_chunks))
    records = stream_records(data, chunk)
    parts = [i for i, (k, _) in enumerate(records) if k.decode("latin-1") in PART_KINDS]
    out: list[tuple[bytes, bytes]] = []
    hit = set(rng.sample(parts, k=min(len(parts), rng.choice([1, 1, 2, 6]))))
    for i, (kind, body) in enumerate(records):
        out += _mutate_part(kind, body, rng) if i in hit else [(kind, body)]
    return with_stream(data, deflate_pieces(record(k, b) for k, b in out), chunk)


def exercise_reader(path: Path) -> list[str]:
    """Everything the commands and the replay TUI ask of a timeline; the warnings given."""
    warnings: list[str] = []
    try:
        timeline = open_timeline(path, warn=warnings.append)
    except FormatError as exc:
        assert "\n" not in str(exc)
        return warnings
    try:
        span = timeline.span()
        if span is not None:
            for _, frame in timeline.frames(span[0], span[1]):
                assert frame.events is not None
            timeline.window(span[1], 30)
            timeline.step(span[0], 5)
            timeline.step(span[1], -70)
            timeline.inventory_doc(span[1])
    finally:
        timeline.close()
    assert all("\n" not in w for w in warnings), warnings
    return warnings


def run_cli(*argv: str) -> tuple[int, str, str]:
    """``iotop-plus ARGV`` in-process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


VARIANTS: tuple[tuple[str, ...], ...] = (
    ("-f", "json"), (), ("--issuers",), ("--health",), ("--overview",), ("-f", "csv"),
)  # fmt: skip


def check_case(path: Path, state: Path, case: int) -> None:
    """One damaged recording through the reader and the commands; raises AssertionError (or
    whatever escaped) when something is wrong: a traceback, a message of more than one line,
    output that is not valid UTF-8 or holds a control character."""
    exercise_reader(path)
    extra = VARIANTS[case % len(VARIANTS)]
    code, out, err = run_cli("--state-dir", str(state), "snapshot", "--from", str(path), *extra)
    assert code in (0, 1), (code, err)
    for text in (out, err):
        text.encode()  # valid UTF-8: no lone surrogate
        assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text
    assert "Traceback" not in err
    if case % 3:
        return
    bundle = path.parent / "fuzz-bundle.rec"
    code, _, err = run_cli(
        "--state-dir", str(state), "bundle", "--dir", str(path.parent), "--last", "1h",
        "-o", str(bundle), "--force",
    )  # fmt: skip
    assert code in (0, 1) and "Traceback" not in err, (code, err)
    err.encode()
    if code == 0:
        exercise_reader(bundle)
    bundle.unlink(missing_ok=True)
