"""The plans and readings of the tuning experiments, with no I/O.

What a queue-depth sweep runs (its depths) and what an A/B runs (its order, its pattern, its
headline figure), and how each is read: where a sweep's IOPS curve bends and what an A/B's
runs say beyond their noise. Everything here is a pure function of its arguments, so it can be
checked on constructed figures; :mod:`iotop_plus.probe.experiments` runs fio to get them.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from iotop_plus.devices.settings import SETTINGS
from iotop_plus.probe.presets import PRESETS, Preset, ProbeParams
from iotop_plus.probe.results import DiskUtil, Issuers, ProbeResult, other_io_note

#: The default deepest queue of a sweep.
DEFAULT_MAX_QD = 128
#: Seconds per sweep step by default: enough for a curve, short enough to try things.
DEFAULT_STEP_RUNTIME_S = 3
#: A step whose IOPS reach less than this share of what linear scaling from the previous step
#: predicts ends the near-linear range.
SCALING_EFFICIENCY = 0.8
#: IOPS that grow by less than this share from one step to the next have reached a plateau.
PLATEAU_GAIN = 0.10
#: Mean latency that grows by more than this share in one step is rising with QD.
LATENCY_RISE = 0.25
#: The share of the peak IOPS whose QD a sweep names as the useful depth.
PEAK_SHARE = 0.9
#: The settings an A/B may compare.
AB_SETTINGS = ("read_ahead_kb", "scheduler", "nr_requests")
#: The A/B rounds by default (each round runs every value once).
DEFAULT_ROUNDS = 2


# --- queue-depth sweep -----------------------------------------------------------------------


@dataclass(frozen=True)
class SweepStep:
    """The figures of one queue depth of a sweep."""

    qd: int
    """I/Os in flight (fio iodepth, one job)."""
    iops: float
    """I/Os per second."""
    mean_lat_us: float
    """Mean completion latency."""
    p99_us: float | None
    """99th percentile completion latency, when fio gave it."""
    bw_kib_s: float
    """Bandwidth in KiB/s."""
    util_pct: float | None
    """How busy the device was (fio's ``disk_util``), when fio could tell."""
    fio_ios: int = 0
    """I/Os fio issued at this step."""
    device_ios: int | None = None
    """I/Os the device served meanwhile (its own counters, via fio's ``disk_util``)."""
    device_p99_us: float | None = None
    """99th percentile device-side read latency (the block tracer), when it ran."""
    issuers: Issuers | None = None
    """Who issued the device's requests during the step (the block tracer), when it ran."""


@dataclass(frozen=True)
class SweepAnalysis:
    """Where the IOPS curve bends, read off the sweep's own table."""

    linear_until_qd: int | None
    """The last QD up to which IOPS scaled near-linearly; None with < 2 steps."""
    full_saturation_qd: int | None
    """The first QD from which IOPS stay on a plateau while mean latency rises; None if the
    table never shows one."""
    qd_90pct: int | None
    """The smallest QD reaching 90% of the peak IOPS."""
    peak_iops: float
    """The highest IOPS of the sweep."""
    peak_qd: int | None
    """The QD of the peak."""
    still_rising: bool
    """Whether the deepest step is the peak and still gained on the one before it."""
    efficiencies: tuple[tuple[int, float], ...]
    """(QD, IOPS over what linear scaling from the previous step predicts), from the 2nd
    step."""
    other_io: tuple[str, ...] = ()
    """One line per step whose device served clearly more I/Os than fio issued."""

    def summary(self) -> list[str]:
        """The reading in plain lines, each one true of the table it sits under."""
        if self.peak_qd is None:
            return ["no steps: nothing to read"]
        peak = f"peak {self.peak_iops:,.0f} IOPS at QD {self.peak_qd}"
        if self.still_rising:
            peak += ", the deepest step: still rising, a deeper queue may give more"
        lines = [f"90% of peak IOPS is reached at QD {self.qd_90pct} ({peak})"]
        slowed = next((e for e in self.efficiencies if e[1] < SCALING_EFFICIENCY), None)
        if self.linear_until_qd is None:
            lines.append("scaling: not enough steps to tell")
        elif slowed is None:
            lines.append(f"scaling: near-linear up to the deepest step, QD {self.linear_until_qd}")
        else:
            line = (
                f"scaling slows from QD {self.linear_until_qd}: QD {slowed[0]} gave "
                f"{slowed[1]:.0%} of the IOPS linear scaling predicts"
            )
            later = [qd for qd, eff in self.efficiencies if eff >= SCALING_EFFICIENCY]
            again = next((qd for qd in later if qd > slowed[0]), None)
            if again is not None:
                line += f", but QD {again} scaled again (noise? longer steps would tell)"
            lines.append(line)
        if self.full_saturation_qd is None:
            lines.append("full saturation: not reached (IOPS did not level off as latency rose)")
        else:
            lines.append(
                f"full saturation from QD {self.full_saturation_qd}: IOPS stop growing "
                f"(no deeper step adds {PLATEAU_GAIN:.0%}) while mean latency rises"
            )
        return lines + list(self.other_io)


@dataclass(frozen=True)
class SweepResult:
    """A finished (or partly finished) sweep."""

    target: str
    """Where it ran, for people."""
    device: str | None
    """The device measured, when known."""
    preset: str
    """The preset whose pattern was run at each QD."""
    bs: str
    """Block size."""
    step_runtime_s: int
    """Seconds per step."""
    steps: tuple[SweepStep, ...]
    """The steps, QD increasing."""
    analysis: SweepAnalysis
    """Where the curve bends."""
    complete: bool = True
    """False when the sweep was stopped before its last step."""


def sweep_depths(max_qd: int) -> tuple[int, ...]:
    """1, 2, 4 ... up to ``max_qd`` (``max_qd`` itself last when not a power of two)."""
    if max_qd < 1:
        raise ValueError(f"max QD must be at least 1: {max_qd}")
    depths = [1]
    while depths[-1] * 2 <= max_qd:
        depths.append(depths[-1] * 2)
    if depths[-1] != max_qd:
        depths.append(max_qd)
    return tuple(depths)


def analyze_sweep(steps: Sequence[SweepStep]) -> SweepAnalysis:
    """Find the peak, the 90%-of-peak QD, the end of linear scaling and the plateau.

    Efficiency of a step is ``IOPS(qd) / (IOPS(prev) * qd / prev_qd)``: 1 when doubling the
    queue doubles the IOPS. Scaling is near-linear up to the last QD before the efficiency
    first falls below :data:`SCALING_EFFICIENCY`: past it each step still gains, only by less.
    Full saturation is the first QD whose IOPS grew by less than :data:`PLATEAU_GAIN` while
    mean latency grew by more than :data:`LATENCY_RISE`, and which no later step beats by
    :data:`PLATEAU_GAIN` or more (a table whose IOPS climb again has not saturated there).
    """
    ordered = sorted(steps, key=lambda s: s.qd)
    if not ordered:
        return SweepAnalysis(None, None, None, 0.0, None, False, ())
    efficiencies: list[tuple[int, float]] = []
    linear_until: int | None = None
    full: int | None = None
    for i, (prev, cur) in enumerate(itertools.pairwise(ordered), start=1):
        ideal = prev.iops * cur.qd / prev.qd
        eff = cur.iops / ideal if ideal > 0 else 0.0
        efficiencies.append((cur.qd, eff))
        if linear_until is None and eff < SCALING_EFFICIENCY:
            linear_until = prev.qd
        if full is None and _plateau_starts(prev, cur, ordered[i + 1 :]):
            full = cur.qd
    if linear_until is None and len(ordered) >= 2:
        linear_until = ordered[-1].qd
    peak = max(ordered, key=lambda s: s.iops)
    qd90 = next((s.qd for s in ordered if s.iops >= PEAK_SHARE * peak.iops), None)
    rising = (
        len(ordered) >= 2
        and peak is ordered[-1]
        and _gain(ordered[-2].iops, peak.iops) >= PLATEAU_GAIN
    )
    other = (
        note
        for s in ordered
        if (
            note := other_io_note(
                f"QD {s.qd}", s.fio_ios, s.device_ios, direct=True, issuers=s.issuers
            )
        )
    )
    return SweepAnalysis(
        linear_until, full, qd90, peak.iops, peak.qd, rising, tuple(efficiencies), tuple(other)
    )


def _gain(before: float, after: float) -> float:
    """The growth from ``before`` to ``after`` as a share of ``before`` (0 from nothing)."""
    return (after - before) / before if before > 0 else 0.0


def _plateau_starts(prev: SweepStep, cur: SweepStep, later: Sequence[SweepStep]) -> bool:
    """IOPS level off at ``cur`` while latency rises, and stay level in every later step."""
    return (
        _gain(prev.iops, cur.iops) < PLATEAU_GAIN
        and _gain(prev.mean_lat_us, cur.mean_lat_us) > LATENCY_RISE
        and all(_gain(cur.iops, s.iops) < PLATEAU_GAIN for s in later)
    )


def step_from_result(qd: int, result: ProbeResult, device: str | None) -> SweepStep:
    """The sweep figures of one probe result at queue depth ``qd``."""
    p99 = result.read.clat.percentile("p99") if result.read else None
    block = result.read.block if result.read else None
    util = _device_util(result, device)
    return SweepStep(
        qd=qd,
        iops=result.iops,
        mean_lat_us=result.mean_clat_us,
        p99_us=p99,
        bw_kib_s=float(result.bw_kib_s),
        util_pct=util.util_pct if util else None,
        fio_ios=sum(d.total_ios for d in result.directions),
        device_ios=(util.read_ios + util.write_ios) if util else None,
        device_p99_us=block.percentile("p99") if block else None,
        issuers=result.issuers,
    )


def sweep_table(steps: Sequence[SweepStep]) -> str:
    """The sweep's table: QD, IOPS, avg lat, p99 (and the device-side p99 when traced),
    bandwidth, device util."""
    traced = any(s.device_p99_us is not None for s in steps)
    head = f"{'QD':>5} {'IOPS':>11} {'avg lat µs':>11} {'p99 µs':>10}"
    lines = [head + (f" {'dev p99':>8}" if traced else "") + f" {'MiB/s':>9} {'util %':>7}"]
    for s in steps:
        p99 = f"{s.p99_us:,.0f}" if s.p99_us is not None else "-"
        util = f"{s.util_pct:.1f}" if s.util_pct is not None else "-"
        dev = f"{s.device_p99_us:,.0f}" if s.device_p99_us is not None else "-"
        lines.append(
            f"{s.qd:>5} {s.iops:>11,.0f} {s.mean_lat_us:>11,.1f} {p99:>10}"
            + (f" {dev:>8}" if traced else "")
            + f" {s.bw_kib_s / 1024:>9,.1f} {util:>7}"
        )
    return "\n".join(lines) + "\n"


# --- A/B of a setting ------------------------------------------------------------------------


@dataclass(frozen=True)
class AbRun:
    """One probe run of an A/B under one value of the setting."""

    round: int
    """Round number, from 1."""
    value: str
    """The value asked for."""
    effective: str
    """The value the kernel kept."""
    iops: float
    """I/Os per second."""
    bw_kib_s: float
    """Bandwidth in KiB/s."""
    mean_lat_us: float
    """Mean completion latency."""
    p99_us: float | None
    """99th percentile completion latency (reads, else writes)."""
    fio_ios: int
    """I/Os fio issued."""
    device_ios: int | None
    """I/Os the device served (fio's ``disk_util``), when fio could tell."""
    device_p99_us: float | None = None
    """99th percentile device-side latency (the block tracer), when it ran."""
    issuers: Issuers | None = None
    """Who issued the device's requests during the run (the block tracer), when it ran."""


@dataclass(frozen=True)
class Spread:
    """The median and range of one figure over the runs of one value."""

    median: float
    """Median over the runs."""
    low: float
    """Smallest run."""
    high: float
    """Largest run."""

    @staticmethod
    def of(values: Sequence[float]) -> Spread:
        """The spread of ``values`` (at least one)."""
        return Spread(statistics.median(values), min(values), max(values))

    def overlaps(self, other: Spread) -> bool:
        """Whether the two ranges share any value."""
        return self.low <= other.high and other.low <= self.high


@dataclass(frozen=True)
class AbValueSummary:
    """The runs of one value, summarised."""

    value: str
    """The value asked for."""
    runs: int
    """How many runs it had."""
    metric: Spread
    """The headline figure (see :attr:`AbResult.metric`)."""
    mean_lat_us: Spread
    """Mean completion latency."""
    p99_us: Spread | None
    """p99 completion latency, when every run had it."""
    fio_ios: float
    """Median I/Os fio issued per run."""
    device_ios: float | None
    """Median I/Os the device served per run, when known."""


@dataclass(frozen=True)
class AbComparison:
    """One value against the first (the baseline)."""

    value: str
    """The value compared."""
    baseline: str
    """The first value."""
    change_pct: float
    """Median headline figure against the baseline's, in percent (+ is more)."""
    verdict: str
    """The plain reading, e.g. ``no difference beyond noise``."""


@dataclass(frozen=True)
class AbResult:
    """A finished (or stopped) A/B."""

    device: str
    """The device whose setting was changed."""
    setting: str
    """The setting's sysfs name."""
    values: tuple[str, ...]
    """The values compared, baseline first."""
    original: str
    """The setting's value before the experiment (restored at the end)."""
    restored: bool
    """Whether the original value was read back after the experiment."""
    preset: str
    """The preset run."""
    target: str
    """Where fio ran, for people."""
    metric: str
    """The headline figure: ``IOPS`` or ``MiB/s``."""
    runs: tuple[AbRun, ...]
    """Every run, in order."""
    summaries: tuple[AbValueSummary, ...]
    """Per value, baseline first."""
    comparisons: tuple[AbComparison, ...]
    """Every value after the first against the first."""
    notes: tuple[str, ...] = ()
    """Facts about how it ran (pattern changed for read-ahead, cache dropped...)."""
    complete: bool = True
    """False when stopped before the last run."""


def ab_order(values: Sequence[str], rounds: int) -> tuple[tuple[int, str], ...]:
    """(round, value) in run order: A B A B ..., each round every value once."""
    return tuple((r + 1, v) for r in range(rounds) for v in values)


def headline_metric(preset: Preset) -> str:
    """``MiB/s`` for sequential patterns, ``IOPS`` for random ones."""
    return "MiB/s" if preset.rw in ("read", "write", "rw") else "IOPS"


def _metric_of(run: AbRun, metric: str) -> float:
    return run.bw_kib_s / 1024 if metric == "MiB/s" else run.iops


def analyze_ab(
    values: Sequence[str], runs: Sequence[AbRun], metric: str
) -> tuple[tuple[AbValueSummary, ...], tuple[AbComparison, ...]]:
    """Per-value medians and spreads, and each value against the first with a verdict.

    The verdict is ``no difference beyond noise`` when the ranges of the headline figure
    overlap (with one run each, when they differ by under 5%).
    """
    summaries: list[AbValueSummary] = []
    for value in values:
        mine = [r for r in runs if r.value == value]
        if not mine:
            continue
        p99s = [r.p99_us for r in mine if r.p99_us is not None]
        dev = [r.device_ios for r in mine if r.device_ios is not None]
        summaries.append(
            AbValueSummary(
                value=value,
                runs=len(mine),
                metric=Spread.of([_metric_of(r, metric) for r in mine]),
                mean_lat_us=Spread.of([r.mean_lat_us for r in mine]),
                p99_us=Spread.of(p99s) if len(p99s) == len(mine) else None,
                fio_ios=statistics.median([r.fio_ios for r in mine]),
                device_ios=statistics.median(dev) if dev else None,
            )
        )
    comparisons: list[AbComparison] = []
    if summaries:
        base = summaries[0]
        for other in summaries[1:]:
            change = (
                (other.metric.median - base.metric.median) / base.metric.median * 100
                if base.metric.median
                else 0.0
            )
            single = base.runs == 1 or other.runs == 1
            noise = abs(change) < 5 if single else base.metric.overlaps(other.metric)
            if noise:
                verdict = "no difference beyond noise"
            else:
                word = "more" if change > 0 else "less"
                verdict = (
                    f"{other.value} gives {abs(change):.0f}% {word} {metric} than {base.value}"
                )
                if single:
                    verdict += " (one run each: run more rounds to know the noise)"
            comparisons.append(AbComparison(other.value, base.value, change, verdict))
    return tuple(summaries), tuple(comparisons)


def ab_table(result: AbResult) -> str:
    """Per-value medians and ranges, device I/Os against fio's, then the verdicts."""
    m = result.metric
    lines = [
        f"{'value':>14} {'runs':>4} {m + ' median':>14} {'range':>21} {'mean lat µs':>12} "
        f"{'p99 µs':>10} {'fio I/Os':>10} {'device I/Os':>12}"
    ]
    for s in result.summaries:
        rng = f"{s.metric.low:,.1f}..{s.metric.high:,.1f}"
        p99 = f"{s.p99_us.median:,.0f}" if s.p99_us else "-"
        dev = f"{s.device_ios:,.0f}" if s.device_ios is not None else "-"
        lines.append(
            f"{s.value:>14} {s.runs:>4} {s.metric.median:>14,.1f} {rng:>21} "
            f"{s.mean_lat_us.median:>12,.1f} {p99:>10} {s.fio_ios:>10,.0f} {dev:>12}"
        )
    for c in result.comparisons:
        lines.append(f"{c.value} vs {c.baseline}: {c.change_pct:+.1f}% {m}: {c.verdict}")
    restored = "restored" if result.restored else "NOT restored"
    lines.append(f"{result.device} {result.setting}: original {result.original} {restored}")
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines) + "\n"


def ab_pattern(setting: str, preset: Preset, params: ProbeParams) -> tuple[Preset, ProbeParams]:
    """The pattern an A/B of ``setting`` runs: read-ahead only acts on buffered sequential
    reads, so it switches to those; the other settings keep ``preset`` and ``params``."""
    if setting != "read_ahead_kb":
        return preset, params
    if preset.rw != "read":
        preset = PRESETS["seqscan"]
        params = replace(preset.params, runtime_s=params.runtime_s, size_mb=params.size_mb)
    return preset, replace(params, direct=False)


def ab_run_from_result(
    round_no: int, value: str, effective: str, result: ProbeResult, device: str | None
) -> AbRun:
    """The A/B figures of one probe result, run with ``value`` in force on ``device``."""
    util = _device_util(result, device)
    direction = result.read or result.write
    block = direction.block if direction else None
    return AbRun(
        round=round_no,
        value=value,
        effective=effective,
        iops=result.iops,
        bw_kib_s=float(result.bw_kib_s),
        mean_lat_us=result.mean_clat_us,
        p99_us=direction.clat.percentile("p99") if direction else None,
        fio_ios=sum(d.total_ios for d in result.directions),
        device_ios=(util.read_ios + util.write_ios) if util else None,
        device_p99_us=block.percentile("p99") if block else None,
        issuers=result.issuers,
    )


def parse_ab_spec(text: str) -> tuple[str, tuple[str, ...]]:
    """Split ``read_ahead_kb=0,1024`` into the setting and its values.

    Raises:
        ValueError: quoting the text when it is not ``SETTING=V1,V2[,...]`` of a known setting.
    """
    setting, sep, rest = text.partition("=")
    setting = setting.strip()
    values = tuple(v.strip() for v in rest.split(",") if v.strip())
    if not sep or not setting:
        raise ValueError(f"expected SETTING=V1,V2[,...], got {text!r}")
    if setting not in AB_SETTINGS:
        known = ", ".join(AB_SETTINGS)
        hint = " (a queue setting, but not one an A/B compares)" if setting in SETTINGS else ""
        raise ValueError(f"cannot A/B {setting!r}{hint}: use one of {known}")
    if len(values) < 2:
        raise ValueError(f"give at least two values for {setting}: {text!r}")
    return setting, values


def _device_util(result: ProbeResult, device: str | None) -> DiskUtil | None:
    """fio's ``disk_util`` entry of ``device``, else its first one, else None."""
    chosen = [u for u in result.disk_util if u.name == device] or list(result.disk_util[:1])
    return chosen[0] if chosen else None


__all__ = [
    "AB_SETTINGS",
    "DEFAULT_MAX_QD",
    "DEFAULT_ROUNDS",
    "DEFAULT_STEP_RUNTIME_S",
    "AbComparison",
    "AbResult",
    "AbRun",
    "AbValueSummary",
    "Spread",
    "SweepAnalysis",
    "SweepResult",
    "SweepStep",
    "ab_order",
    "ab_pattern",
    "ab_run_from_result",
    "ab_table",
    "analyze_ab",
    "analyze_sweep",
    "headline_metric",
    "parse_ab_spec",
    "step_from_result",
    "sweep_depths",
    "sweep_table",
]
