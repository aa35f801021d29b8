"""The journal part's probes in the tracer's one bpftrace program, and their parser.

jbd2 commits one transaction at a time per journal, in phases the kernel marks with
tracepoints: ``jbd2_commit_locking`` (the transaction is locked: no new handles),
``jbd2_commit_flushing`` (ordered data is written), ``jbd2_commit_logging`` (the journal
blocks are written) and ``jbd2_end_commit``. Each phase is the time between its mark and the
next, stamped with the clock. ``jbd2_run_stats`` gives the time the transaction ran before
the commit (``running``) in jiffies only: coarse (4 ms steps at HZ=250).

Maps (``@jb_`` prefix): ``@jb_n[dev]`` commits ended; ``@jb_c[dev, phase]``,
``@jb_s[dev, phase]`` and ``@jb_x[dev, phase]`` the count, sum and largest of each phase
(:data:`PHASES`, in ns; ``running`` in jiffies). ``dev`` is the kernel's ``dev_t`` of the
journal's device.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from iotop_plus.sampling.frame.part import TraceProgram

PHASES = ("locked", "flushing", "logging", "running")
"""Phase names by their number in the maps; ``running`` is in jiffies."""
MAPS = ("@jb_n", "@jb_c", "@jb_s", "@jb_x")


def journal_program_text() -> str:
    """The probe blocks (see the module's doc)."""
    lines = ["tracepoint:jbd2:jbd2_commit_locking { @jb_t[args->dev] = nsecs; }"]
    for phase, event in enumerate(("flushing", "logging", "end_commit")):
        name = f"jbd2_commit_{event}" if event != "end_commit" else "jbd2_end_commit"
        lines += [
            f"tracepoint:jbd2:{name} {{",
            "  $t = @jb_t[args->dev];",
            "  if ($t) {",
            "    $v = nsecs - (uint64)$t;",
            f"    @jb_c[args->dev, {phase}] = count();",
            f"    @jb_s[args->dev, {phase}] = sum($v);",
            f"    @jb_x[args->dev, {phase}] = max($v);",
            "  }",
            "  @jb_t[args->dev] = nsecs;"
            if event != "end_commit"
            else "  delete(@jb_t[args->dev]);",
            *(["  @jb_n[args->dev] = count();"] if event == "end_commit" else []),
            "}",
        ]
    lines += [
        "tracepoint:jbd2:jbd2_run_stats {",
        "  @jb_c[args->dev, 3] = count();",
        "  @jb_s[args->dev, 3] = sum(args->running);",
        "  @jb_x[args->dev, 3] = max(args->running);",
        "}",
    ]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class PhaseStat:
    """One phase of the commits over some interval: how many, their sum and the largest."""

    count: int = 0
    total: int = 0
    top: int = 0

    def merged(self, other: PhaseStat) -> PhaseStat:
        return PhaseStat(
            self.count + other.count, self.total + other.total, max(self.top, other.top)
        )

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None


@dataclass(frozen=True)
class Jbd2Stat:
    """One journal over some interval."""

    commits: int = 0
    phases: Mapping[str, PhaseStat] = field(default_factory=lambda: MappingProxyType({}))

    def merged(self, other: Jbd2Stat) -> Jbd2Stat:
        phases = dict(self.phases)
        for name, stat in other.phases.items():
            phases[name] = phases[name].merged(stat) if name in phases else stat
        return Jbd2Stat(self.commits + other.commits, MappingProxyType(phases))


@dataclass(frozen=True)
class Jbd2Traced:
    """The commits the tracer saw, by the kernel ``dev_t`` of the journal's device."""

    journals: Mapping[int, Jbd2Stat]


EMPTY = Jbd2Traced(MappingProxyType({}))


def parse_journal_maps(maps: Mapping[str, Mapping[str, object]]) -> Jbd2Traced:
    """One tick's printed maps as a :class:`Jbd2Traced`; a key that is not the program's
    shape raises ``ValueError`` quoting it."""
    commits: dict[int, int] = {}
    fields: dict[tuple[int, str], dict[str, int]] = {}
    for name in MAPS:
        for text, value in (maps.get(name) or {}).items():
            if not isinstance(value, int):
                continue
            try:
                parts = [int(x) for x in text.split(",")]
                if name == "@jb_n":
                    (dev,) = parts
                    commits[dev] = commits.get(dev, 0) + value
                    continue
                dev, number = parts
                fields.setdefault((dev, PHASES[number]), {})[name] = value
            except (ValueError, IndexError):
                raise ValueError(f"bad {name} key from the tracer: {text[:80]!r}") from None
    journals: dict[int, dict[str, PhaseStat]] = {dev: {} for dev in commits}
    for (dev, phase_name), got in fields.items():
        journals.setdefault(dev, {})[phase_name] = PhaseStat(
            got.get("@jb_c", 0), got.get("@jb_s", 0), got.get("@jb_x", 0)
        )
    return Jbd2Traced(
        MappingProxyType(
            {dev: Jbd2Stat(commits.get(dev, 0), MappingProxyType(p)) for dev, p in journals.items()}
        )
    )


def merge_journal(a: object, b: object) -> Jbd2Traced:
    """Two intervals' commits together."""
    if not isinstance(a, Jbd2Traced) or not a.journals:
        return b if isinstance(b, Jbd2Traced) else EMPTY
    if not isinstance(b, Jbd2Traced) or not b.journals:
        return a
    out = dict(a.journals)
    for dev, stat in b.journals.items():
        out[dev] = out[dev].merged(stat) if dev in out else stat
    return Jbd2Traced(MappingProxyType(out))


def journal_trace_program() -> TraceProgram:
    """What the journal part adds to the tracer."""
    return TraceProgram(journal_program_text(), MAPS, parse_journal_maps, merge_journal)
