"""A worker thread of ``serve`` or ``record`` that dies ends the command: exit 1, one line.

``serve``'s sampler thread had no exception handling: when it died the process kept its
port, answered every scrape with the last view (or an error) and exited 0 on SIGTERM; a
recorder whose health reader died kept recording without health. The failure is injected
here (``sitecustomize`` in the console script's process makes one part raise on the worker
thread), on a captured tree; the exit path is the real one.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import urllib.request
from pathlib import Path

from tests.support.cli import REPO, cli_argv, cli_env, free_port, serve
from tests.support.wait import holds_within

FIXTURES = Path(__file__).parent.parent / "fixtures"
TREE = (
    "--proc-root",
    str(FIXTURES / "nvme" / "proc"),
    "--sys-root",
    str(FIXTURES / "nvme" / "sys"),
)

SAMPLER_DIES = """
import iotop_plus.export.view as view
_step, _calls = view.ExportSampler.step, []
def step(self):
    _calls.append(1)
    if len(_calls) == 3:  # the first is read on the main thread, then the sampler thread's
        raise RuntimeError("injected: the disk part failed")
    return _step(self)
view.ExportSampler.step = step
"""

HEALTH_READER_DIES = """
import iotop_plus.sampling.health.part as health_part
def _next(self):
    raise RuntimeError("injected: the health reader failed")
health_part.HealthWorker._next = _next
"""


def _run_until_it_ends(argv: list[str], inject: str, tmp_path: Path) -> tuple[int, str, bool]:
    """Run the console script with ``inject`` as its sitecustomize; SIGTERM it if it has not
    ended by itself within 30 s. Its exit status, stderr, and whether it ended by itself."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(inject)
    env = cli_env({"PYTHONPATH": f"{site}:{REPO}"})
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env, cwd="/")
    by_itself = holds_within(lambda: proc.poll() is not None, 30.0)
    if not by_itself:
        proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    return proc.returncode, err, by_itself


def test_serve_whose_sampler_dies_exits_1_with_one_line(tmp_path: Path) -> None:
    argv = cli_argv(*TREE, state=tmp_path / "state")
    argv += ["serve", "--listen", f"127.0.0.1:{free_port()}", "--interval", "0.1"]
    code, err, by_itself = _run_until_it_ends(argv, SAMPLER_DIES, tmp_path)
    assert by_itself, f"serve kept running with its sampler dead (then exit {code}): {err}"
    assert code == 1, err
    errors = [line for line in err.splitlines() if "error" in line]
    assert errors == [
        "iotop-plus: error: the sampler failed (RuntimeError: injected: the disk part failed);"
        " stopping (exit 1) so that it can be restarted"
    ], err
    assert "Traceback" not in err


def test_serve_textfile_whose_health_reader_dies_exits_1(tmp_path: Path) -> None:
    argv = cli_argv(*TREE, state=tmp_path / "state")
    argv += ["serve", "--textfile", str(tmp_path / "iotop.prom"), "--interval", "0.1"]
    code, err, by_itself = _run_until_it_ends(argv, HEALTH_READER_DIES, tmp_path)
    assert by_itself and code == 1, err
    assert "iotop-plus: error: the health reader failed (RuntimeError: injected: " in err
    assert "Traceback" not in err


def test_record_whose_health_reader_dies_exits_1_with_one_line(tmp_path: Path) -> None:
    argv = cli_argv(*TREE, state=tmp_path / "state")
    argv += ["record", "--dir", str(tmp_path / "rec"), "--interval", "0.1"]
    code, err, by_itself = _run_until_it_ends(argv, HEALTH_READER_DIES, tmp_path)
    assert by_itself, f"record kept running with its health reader dead (then exit {code}): {err}"
    assert code == 1, err
    errors = [line for line in err.splitlines() if "error" in line]
    assert errors == [
        "iotop-plus record: error: the health reader failed (RuntimeError: injected: the health"
        " reader failed); stopping (exit 1) so that it can be restarted"
    ], err
    assert "Traceback" not in err


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return response.read().decode()


def _reads(body: str, device: str) -> float | None:
    prefix = f'iotop_plus_disk_reads_completed_total{{device="{device}"}} '
    for line in body.splitlines():
        if line.startswith(prefix):
            return float(line[len(prefix) :])
    return None


def test_serve_goes_on_when_a_device_leaves_diskstats_before_the_inventory(
    tmp_path: Path,
) -> None:
    """A real condition that killed the sampler: a device gone from /proc/diskstats while
    /sys/block still lists it (a loop device detached between the two reads on a busy host;
    here a captured tree changed under serve). It raised KeyError on the sampler thread, and
    serve went on answering scrapes with the figures of before."""
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "nvme", tree, symlinks=True)
    diskstats = tree / "proc" / "diskstats"
    roots = ("--proc-root", str(tree / "proc"), "--sys-root", str(tree / "sys"))
    with serve("--all", state=tmp_path / "state", roots=roots, interval="0.1") as port:
        assert holds_within(lambda: _reads(_scrape(port), "nvme0n2") is not None, 30.0)
        lines = diskstats.read_text().splitlines(keepends=True)
        kept = [line for line in lines if " nvme0n2 " not in line]
        kept = [line.replace(" nvme0n1 1000000 ", " nvme0n1 1000123 ") for line in kept]
        diskstats.write_text("".join(kept))
        assert holds_within(lambda: _reads(_scrape(port), "nvme0n1") == 1000123, 30.0)
        assert _reads(_scrape(port), "nvme0n2") is None
    # (serve() checks that it then ends with exit 0 on SIGTERM)
