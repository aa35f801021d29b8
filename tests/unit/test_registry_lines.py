"""The registry's lines say each part's key and whether it is read on every frame, so the
live source loads only the modules of the parts it reads (the TUI's first figures wait for
no other): the lines must say what the parts' classes say."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from iotop_plus.sampling.frame import registry
from tests.support.synthetic import SyntheticTree

REPO = Path(__file__).resolve().parents[2]


def test_each_line_names_its_parts_key_always_and_record_flag() -> None:
    for entry, part in zip(registry.REGISTERED, registry.parts(), strict=True):
        words = entry.split()
        assert words[1] == part.key, entry
        assert ("always" in words[2:]) == part.always, entry
        flags = [w[2:] for w in words[2:] if w.startswith("--")]
        assert flags == ([part.record_flag] if part.record_flag else []), entry
        assert registry.part(part.key) is part  # one instance, whichever way it is asked for


def test_chosen_is_in_registry_order_and_the_same_tuple_again() -> None:
    got = registry.chosen({"health", "journal"}, always=True)
    assert [p.key for p in got] == ["journal", "memory", "queues", "health"]
    assert registry.chosen({"journal", "health"}, always=True) is got
    assert [p.key for p in registry.chosen({"blocked"})] == ["blocked"]


def test_a_registered_key_cannot_be_registered_again() -> None:
    part = registry.part("memory")
    assert part is not None
    try:
        registry.register(part)
    except ValueError as exc:
        assert "registered already" in str(exc)
    else:
        registry.unregister("memory")
        raise AssertionError("a second 'memory' part was registered")


def test_the_live_source_loads_only_the_parts_it_reads(tmp_path: Path) -> None:
    tree = SyntheticTree(tmp_path / "tree", 2)
    unread = {
        type(p).__module__: p.key
        for p in registry.parts()
        if not p.always and p.key not in ("health", "blocked", "issuers")
    }  # (the live source names the issuers' key: that small module is loaded with it)
    code = textwrap.dedent(
        f"""
        import sys
        from iotop_plus.roots import Roots
        from iotop_plus.sampling.frame.live import LiveSource
        source = LiveSource(Roots.resolve({str(tree.roots.proc)!r}, {str(tree.roots.sys)!r}))
        source.want("health", True)
        for _ in range(2):
            frame = source.next_frame()
        loaded_before = sorted(m for m in {sorted(unread)!r} if m in sys.modules)
        source.want("blocked", True)
        frame = source.next_frame()
        print(loaded_before, sorted(frame.parts), "iotop_plus.sampling.blocked.part" in sys.modules)
        """
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    out = run.stdout.split("] [")
    assert out[0] == "[", f"loaded for frames that do not read them: {out[0]}]"
    assert "'blocked'" in out[1] and out[1].endswith("True\n")
