"""BlindWatch: when the tracer saw far fewer completions than the disks report, restart it."""

from __future__ import annotations

from typing import NamedTuple

from iotop_plus.sampling.latency.blind import BLIND_FRAMES, BLIND_MIN_IOS, BlindWatch


class Disk(NamedTuple):
    reads: int
    writes: int


def run(watch: BlindWatch, frames: list[tuple[dict[str, Disk], dict[str, int]]]) -> list[bool]:
    return [watch.blind(counters, seen) for counters, seen in frames]


def frames_of(done_per_frame: int, seen_per_frame: int, n: int, name: str = "sda"):
    out = []
    for i in range(n):
        out.append(({name: Disk(i * done_per_frame, 0)}, {name: seen_per_frame}))
    return out


def test_a_tracer_that_sees_every_completion_is_not_blind() -> None:
    assert not any(run(BlindWatch(), frames_of(10_000, 10_000, 6)))


def test_a_tracer_seeing_a_third_is_blind_after_consecutive_frames() -> None:
    verdicts = run(BlindWatch(), frames_of(10_000, 3_000, 6))
    # the first frame has no previous counters; then BLIND_FRAMES short frames in a row
    assert verdicts.index(True) == BLIND_FRAMES
    assert not any(verdicts[:BLIND_FRAMES])


def test_one_short_frame_is_forgiven() -> None:
    watch = BlindWatch()
    counters = [{"sda": Disk(i * 10_000, 0)} for i in range(5)]
    seen = [10_000, 10_000, 2_000, 10_000, 10_000]  # a late tick, caught up next frame
    assert not any(watch.blind(c, {"sda": s}) for c, s in zip(counters, seen, strict=True))


def test_quiet_disks_never_count() -> None:
    few = BLIND_MIN_IOS - 1
    assert not any(run(BlindWatch(), frames_of(few, 0, 6)))


def test_devices_the_tracer_never_saw_do_not_count() -> None:
    """A bio-based dm device or a partition has completions but no traced requests."""
    watch = BlindWatch()
    verdicts = []
    for i in range(6):
        counters = {"dm-0": Disk(i * 50_000, i * 50_000), "sda": Disk(i * 1_000, 0)}
        verdicts.append(watch.blind(counters, {"sda": 1_000}))
    assert not any(verdicts)


def test_counters_without_reads_and_writes_are_ignored() -> None:
    class Numbers(NamedTuple):
        major: int
        minor: int

    assert not any(BlindWatch().blind({"sda": Numbers(8, 0)}, {"sda": 5}) for _ in range(4))
