"""fio's command line for one probe (never a shell string), and the prefix that ties its life
to ours."""

from __future__ import annotations

import os
from pathlib import Path

from iotop_plus.probe.presets import Preset, ProbeParams
from iotop_plus.probe.target import ProbeTarget
from iotop_plus.programs import lookup_program
from iotop_plus.roots import Roots


def io_uring_disabled(roots: Roots) -> bool:
    """Whether sysctl ``kernel.io_uring_disabled`` keeps this process from io_uring."""
    try:
        value = int((roots.proc / "sys" / "kernel" / "io_uring_disabled").read_text())
    except (OSError, ValueError):
        return False
    # 1 allows privileged processes (and the io_uring_group); 2 allows nobody.
    return value == 2 or (value == 1 and os.geteuid() != 0)


def build_argv(
    fio: str,
    preset: Preset,
    params: ProbeParams,
    target: ProbeTarget,
    filename: Path | str,
    *,
    span: str | None = None,
) -> list[str]:
    """fio's argv for one run (never a shell string).

    ``filename`` is a ``/proc/self/fd/N`` path; the description names the target for ``ps``.
    ``span``: the probe laid out its file itself, fio rewrites only its first ``span`` bytes
    and may neither create a file nor drop the page cache (``pg_test_fsync`` does neither).
    """
    argv = [
        fio,
        f"--name={preset.name}",
        f"--description=iotop-plus probe on {target.label}",
        f"--filename={filename}",
        f"--rw={preset.rw}",
        f"--bs={params.bs}",
        f"--iodepth={params.iodepth}",
        f"--numjobs={params.numjobs}",
        f"--ioengine={params.ioengine}",
        f"--direct={int(params.direct)}",
        f"--size={span or target.size_bytes}",
        f"--runtime={params.runtime_s}",
        "--time_based",
        "--group_reporting",
        # Jobs as threads of one process: fio's forked job processes call setsid(), so
        # only threads die for certain with fio when a probe is cancelled.
        "--thread",
        "--randrepeat=0",
        "--output-format=json",
        "--status-interval=1",
    ]
    if preset.rwmixread is not None:
        argv.append(f"--rwmixread={preset.rwmixread}")
    if preset.fsync:
        argv.append(f"--fsync={preset.fsync}")
    if preset.fdatasync:
        argv.append(f"--fdatasync={preset.fdatasync}")
    if preset.sync_io:
        argv.append(f"--sync={preset.sync_io}")
    if span is not None:
        argv += ["--allow_file_create=0", "--invalidate=0"]
    if target.readonly:
        argv.append("--readonly")
    return argv


def pdeathsig_prefix() -> list[str]:
    """``setpriv --pdeathsig KILL --`` (fio dies with us), or [] without setpriv."""
    setpriv = lookup_program("setpriv").path
    return [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []
