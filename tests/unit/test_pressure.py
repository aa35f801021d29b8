"""Pressure (PSI) parsing: the real host's files, a captured tree, and malformed input."""

from __future__ import annotations

from pathlib import Path

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.pressure import parse_pressure, read_pressure

IO = (
    "some avg10=1.50 avg60=3.42 avg300=6.62 total=984707315\n"
    "full avg10=0.05 avg60=2.59 avg300=4.76 total=404181119\n"
)


def _tree(tmp_path: Path, files: dict[str, str]) -> Roots:
    proc = tmp_path / "proc"
    (proc / "pressure").mkdir(parents=True)
    (proc / "diskstats").write_text("   7       0 loop0 1 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n")
    # The memory reader's files, so the only note a test sees is its own (PSI).
    (proc / "meminfo").write_text("Dirty:              1200 kB\nWriteback:             0 kB\n")
    (proc / "vmstat").write_text(
        "nr_dirty 300\nnr_writeback 0\nnr_dirty_threshold 1000\nnr_dirty_background_threshold 500\n"
    )
    for name, text in files.items():
        (proc / "pressure" / name).write_text(text)
    (tmp_path / "sys" / "block").mkdir(parents=True)
    return Roots(proc, tmp_path / "sys")


def test_both_lines_are_parsed_with_their_units() -> None:
    res = parse_pressure(IO)
    assert res.some is not None and res.full is not None
    assert (res.some.avg10, res.some.avg60, res.some.avg300) == (1.5, 3.42, 6.62)
    assert res.some.total_us == 984707315
    full = {"avg10": 0.05, "avg60": 2.59, "avg300": 4.76, "total_us": 404181119}
    assert res.full.as_json() == full


def test_a_cpu_file_without_a_full_line_has_full_none() -> None:
    res = parse_pressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=12\n")
    assert res.full is None and res.some is not None and res.some.total_us == 12


@pytest.mark.parametrize("text", ["", "garbage\n", "some avg10=x avg60=0 avg300=0 total=1\n"])
def test_malformed_text_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        parse_pressure(text)


def test_the_live_host_has_io_pressure_or_says_why() -> None:
    pressure = read_pressure(Roots())
    if Path("/proc/pressure/io").exists():
        assert pressure.io is not None and pressure.io.some is not None
    else:
        assert pressure.problem is not None and "CONFIG_PSI" in pressure.problem


def test_a_tree_without_psi_says_so_in_one_line(tmp_path: Path) -> None:
    roots = _tree(tmp_path, {})
    (roots.proc / "pressure").rmdir()
    pressure = read_pressure(roots)
    assert pressure.resources == {}
    assert pressure.problem is not None and "\n" not in pressure.problem
    assert "psi=1" in pressure.problem


def test_a_malformed_file_is_named_and_the_others_are_kept(tmp_path: Path) -> None:
    roots = _tree(tmp_path, {"io": IO, "memory": "nonsense\n", "cpu": IO})
    pressure = read_pressure(roots)
    assert set(pressure.resources) == {"io", "cpu"}
    assert pressure.problem is not None and "memory" in pressure.problem


def test_every_live_frame_carries_pressure(tmp_path: Path) -> None:
    roots = _tree(tmp_path, {"io": IO})
    frame = LiveSource(roots).next_frame()
    assert frame.pressure is not None and frame.pressure.io is not None
    assert frame.pressure.io.full is not None and frame.pressure.io.full.avg10 == 0.05


def test_snapshot_json_pressure_is_null_with_one_line_where_psi_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from iotop_plus import cli

    roots = _tree(tmp_path, {})
    code = cli.main(
        [
            *("--proc-root", str(roots.proc), "--sys-root", str(roots.sys)),
            *("snapshot", "-f", "json", "-c", "2", "-i", "0.01", "-a"),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0
    stats = json.loads(out)["sysstat"]["hosts"][0]["statistics"]
    assert [s["pressure"] for s in stats] == [None, None]
    assert err.splitlines() == [
        f"iotop-plus: note: no pressure (PSI) figures: {roots.proc}/pressure/io is missing "
        "(kernel without CONFIG_PSI, or booted with psi=0; add psi=1 to the kernel command line)"
    ]


def test_snapshot_json_pressure_comes_from_the_tree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from iotop_plus import cli

    roots = _tree(tmp_path, {"io": IO})
    code = cli.main(
        [
            *("--proc-root", str(roots.proc), "--sys-root", str(roots.sys)),
            *("snapshot", "-f", "json", "-c", "1", "-i", "0.01", "-a"),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    pressure = json.loads(out)["sysstat"]["hosts"][0]["statistics"][0]["pressure"]
    assert pressure == {"io": parse_pressure(IO).as_json()}
