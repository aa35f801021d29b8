"""What a finished fio run left (:class:`FioRun`), and what went wrong with it, in one plain
line (:func:`final_document`), or whether io_uring was the trouble (fall back to libaio)."""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Any

from iotop_plus.probe.fio_parse import job_errors
from iotop_plus.probe.presets import ProbeParams
from iotop_plus.probe.run_types import ProbeError

# errnos with which a job fails when io_uring cannot be used: EPERM (sysctl
# kernel.io_uring_disabled, seccomp), ENOSYS (kernel without it), EOPNOTSUPP.
IO_URING_UNAVAILABLE = {1, 38, 95}


@dataclass(frozen=True)
class FioRun:
    """What fio left when it exited: status, JSON documents, text lines, stderr, leftovers."""

    returncode: int
    docs: tuple[tuple[str, Any], ...]
    text: tuple[str, ...]
    stderr: str
    garbage: str
    pid: int | None = None
    """fio's pid (setpriv execs it): the issuer of its requests."""


def io_uring_unavailable(run: FioRun) -> bool:
    """Whether the run failed because io_uring cannot be used here (retry with libaio)."""
    errnos = set()
    for _, doc in run.docs:
        for job in doc.get("jobs", []) if isinstance(doc, dict) else []:
            if isinstance(job, dict) and job.get("error"):
                errnos.add(job["error"])
    words = " ".join(run.text) + " " + run.stderr
    if "io_uring" not in words and not errnos:
        return False
    if errnos & IO_URING_UNAVAILABLE and "io_uring" in words:
        return True
    lowered = words.lower()
    return "io_uring" in lowered and (
        "operation not permitted" in lowered
        or "function not implemented" in lowered
        or "not supported" in lowered
        or "not loadable" in lowered
    )


def final_document(run: FioRun, params: ProbeParams) -> tuple[str, Any]:
    """fio's final document, or a :class:`ProbeError` saying plainly what went wrong."""
    said = fio_said(run)
    if run.returncode < 0:
        name = (
            signal.Signals(-run.returncode).name
            if -run.returncode in signal.valid_signals()
            else ""
        )
        raise ProbeError(f"fio was killed by signal {-run.returncode} {name}".rstrip() + said)
    if run.docs:
        raw, doc = run.docs[-1]
        errors = job_errors(doc)
        if errors:
            raise ProbeError(f"fio job failed ({', '.join(errors)}){said}")
        if run.returncode != 0:
            raise ProbeError(f"fio exited with status {run.returncode}{said}")
        return raw, doc
    lowered = said.lower()
    if "engine" in lowered and ("not loadable" in lowered or "failed to load" in lowered):
        raise ProbeError(
            f"fio has no I/O engine {params.ioengine!r} (try io_uring or libaio){said}"
        )
    if run.returncode != 0:
        raise ProbeError(f"fio exited with status {run.returncode} and no result{said}")
    if run.garbage or run.text:
        raise ProbeError(f"fio printed no JSON result{said}")
    raise ProbeError("fio printed nothing")


def fio_said(run: FioRun) -> str:
    """fio's own error lines (at most three, 300 characters) as ``": ..."``, or ``""``."""
    lines = [*run.text, *(x for x in run.stderr.splitlines() if x.strip())]
    if run.garbage and not lines:
        lines = run.garbage.splitlines()
    # Messages that say what failed; "fio: " lines are fio's own errors.
    picked = [x.strip() for x in lines if x.strip()]
    if not picked:
        return ""
    errors = [x for x in picked if "error" in x.lower() or x.startswith("fio:")] or picked
    text = "; ".join(errors[-3:])
    if len(text) > 300:
        text = text[:297] + "..."
    return f": {text}"
