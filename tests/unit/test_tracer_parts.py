"""Parts add their probes to the one tracer: the program carries each wanted part's probe
blocks, keeps two copies of its printed maps and prints and clears the one its probes left
with the others at every tick and mark; the parser hands those maps to the part's ``parse``;
a frame carries each part's value merged over its ticks; a part whose ``parse`` refuses
loses that tick's value with one status line, never the tracer; a new set of traced parts
restarts the tracer (partial)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping

import pytest

from iotop_plus.sampling.latency.generations import (
    GENERATION,
    buffered_text,
    logical_name,
)
from iotop_plus.sampling.latency.hist import RUNNING
from iotop_plus.sampling.latency.parser import TracerBatch, TracerParser
from iotop_plus.sampling.latency.part import LatencyPart
from iotop_plus.sampling.latency.program import tracer_program
from iotop_plus.sampling.latency.tracer import Tracer
from tests.support.toy_trace import TOY_KEY, TOY_TEXT, toy_program


def _block(program: str, head: str) -> str:
    start = program.index(head)
    return program[start : program.index("\n}", start)]


def test_the_program_appends_the_parts_probes_and_prints_their_maps_with_the_others() -> None:
    plain = tracer_program(queue=True, marked=True, errors=True)
    toy = toy_program()
    program = tracer_program(queue=True, marked=True, errors=True, traced={TOY_KEY: toy})
    assert TOY_TEXT not in plain and buffered_text(toy.text, toy.maps) in program
    assert "@ty_n" not in plain
    for head, line in (("interval:ms:", "tick"), ("sys_enter_kill", "mark")):
        block = _block(program, head)
        # In the one group, after the block maps and before the line that ends the batch:
        # the flag flips first, then the copy the probes left is printed and cleared.
        flip = block.index(f"{GENERATION} = 1 - {GENERATION};")
        for suffix in ("__0", "__1"):
            assert flip < block.index(f"print(@h{suffix})")
            assert block.index(f"clear(@h{suffix})") < block.index(f"print(@ty_n{suffix});")
        assert block.index("clear(@ty_n__1);") < block.index(f'printf("{line} ')
    assert "END {" not in plain and "END {" not in program


def test_every_printed_map_is_written_in_two_copies_and_read_under_its_name() -> None:
    program = tracer_program(queue=True, marked=True, errors=True, attribution=True)
    for name in ("@h", "@dp", "@dm", "@err", "@qs", "@qn", "@ic"):
        assert f"{name}__0[" in program and f"{name}__1[" in program
        assert f"{name}[" not in program
        assert logical_name(f"{name}__1") == name
    assert logical_name("@h") == "@h" and logical_name("@x__2") == "@x__2"


def test_a_parts_writes_go_to_the_open_copy_of_its_maps() -> None:
    text = (
        "tracepoint:a:b { @x_n[pid] = count(); }\n"
        "tracepoint:a:c {\n  $v = 1; @x_t[tid] = nsecs;\n"
        "  @x_n[pid, 2] = count();\n  @x_s[pid] =\n    sum($v);\n  delete(@x_t[tid]);\n}\n"
    )
    assert buffered_text(text, ("@x_n", "@x_s")) == (
        "tracepoint:a:b { if (@tg) { @x_n__1[pid] = count(); }"
        " else { @x_n__0[pid] = count(); } }\n"
        "tracepoint:a:c {\n  $v = 1; @x_t[tid] = nsecs;\n"
        "  if (@tg) { @x_n__1[pid, 2] = count(); @x_s__1[pid] = sum($v); }"
        " else { @x_n__0[pid, 2] = count(); @x_s__0[pid] = sum($v); }\n"
        "  delete(@x_t[tid]);\n}\n"
    )


@pytest.mark.parametrize(
    "text",
    [
        "tracepoint:a:b { delete(@x_n[pid]); }",
        "tracepoint:a:b /@x_n[pid]/ { @x_n[pid] = count(); }",
        "tracepoint:a:b { $v = @x_n[pid]; }",
        "interval:s:1 { clear(@x_n); }",
    ],
)
def test_a_printed_map_used_other_than_written_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="@x_n is used other than written"):
        buffered_text(text, ("@x_n",))


def test_traced_only_the_program_has_no_block_probe() -> None:
    toy = toy_program()
    program = tracer_program(queue=True, marked=True, timed=False, traced={TOY_KEY: toy})
    assert "block:" not in program and "@h" not in program and "@is" not in program
    assert buffered_text(toy.text, toy.maps) in program
    assert "print(@ty_n__0); clear(@ty_n__0);" in program
    assert "sys_enter_kill" in program  # frames still mark their ends


def _feed(parser: TracerParser, *docs: object) -> TracerBatch | None:
    batch = None
    for doc in docs:
        batch = parser.feed(json.dumps(doc))
    return batch


def test_the_parser_hands_a_part_its_maps_and_keeps_the_block_maps() -> None:
    seen: list[Mapping[str, object]] = []

    def parse(maps: Mapping[str, Mapping[str, object]]) -> object:
        seen.append(maps)
        return toy_program().parse(maps)

    parser = TracerParser({TOY_KEY: toy_program(parse)})
    batch = _feed(
        parser,
        {"type": "map", "data": {"@ds__1": {"7340042,R": 5000}}},
        {"type": "map", "data": {"@ty_n__0": {"41": 3, "42": 9}}},
        {"type": "printf", "data": "tick 1000\n"},
    )
    assert batch is not None
    assert batch.ops[(7340042, "read")].device.sum_ns == 5000
    assert batch.traced[TOY_KEY] == {41: 3, 42: 9}
    # A tick in which the part's map held nothing (bpftrace prints no empty map): {}.
    empty = _feed(parser, {"type": "printf", "data": "mark 2000\n"})
    assert empty is not None and empty.traced[TOY_KEY] == {}
    assert [dict(m) for m in seen] == [{"@ty_n": {"41": 3, "42": 9}}, {"@ty_n": {}}]


def test_a_map_without_keys_comes_as_one_empty_key() -> None:
    got: list[Mapping[str, object]] = []

    def parse(maps: Mapping[str, Mapping[str, object]]) -> object:
        got.append(maps["@ty_n"])
        return 0

    program = toy_program(parse)
    parser = TracerParser({TOY_KEY: program})
    _feed(parser, {"type": "map", "data": {"@ty_n__1": 7}}, {"type": "printf", "data": "tick 1\n"})
    assert got == [{"": 7}]


def test_a_part_whose_parse_refuses_loses_that_tick_only() -> None:
    parser = TracerParser({TOY_KEY: toy_program()})
    bad = _feed(
        parser,
        {"type": "map", "data": {"@ty_n__1": {"not-a-pid": 3}}},
        {"type": "map", "data": {"@ds__1": {"7340042,R": 5000}}},
        {"type": "printf", "data": "tick 1000\n"},
    )
    assert bad is not None and TOY_KEY not in bad.traced
    assert bad.traced_problems[TOY_KEY].startswith(f"{TOY_KEY}: tracer output not understood")
    assert "\n" not in bad.traced_problems[TOY_KEY]
    assert bad.ops[(7340042, "read")].device.sum_ns == 5000  # the block maps are not lost
    good = _feed(
        parser,
        {"type": "map", "data": {"@ty_n__0": {"5": 1}}},
        {"type": "printf", "data": "tick 2000\n"},
    )
    assert good is not None and good.traced[TOY_KEY] == {5: 1} and not good.traced_problems


def test_a_part_whose_parse_has_a_bug_never_stops_the_parser() -> None:
    def broken(maps: Mapping[str, Mapping[str, object]]) -> object:
        raise KeyError("oops")

    parser = TracerParser({TOY_KEY: toy_program(broken)})
    batch = _feed(parser, {"type": "printf", "data": "tick 1\n"})
    assert batch is not None and "KeyError" in batch.traced_problems[TOY_KEY]


class FedTracer(Tracer):
    """A tracer whose batches the test hands in (no child)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(queue=False, **kwargs)  # type: ignore[arg-type]
        self.closed = False

    def start(self) -> None:
        self.attached.set()
        self.ready.set()
        self.first_tick_ns = 1

    def put(self, batch: TracerBatch) -> None:
        with self._arrived:
            self._batches.append(batch)

    def close(self, timeout: float = 2.0) -> None:
        self.closed = True


def test_a_frame_carries_each_parts_value_merged_over_its_ticks() -> None:
    tracers: list[FedTracer] = []

    def make() -> FedTracer:
        tracers.append(FedTracer(traced=part.traced, timed=part.timed))
        return tracers[-1]

    part = LatencyPart(
        make_tracer=make, check=lambda: (None, None), traced={TOY_KEY: toy_program()}
    )
    part.start()
    tracer = tracers[0]
    assert tracer.traced.keys() == {TOY_KEY}
    tracer.put(TracerBatch(1000, {}, traced={TOY_KEY: {7: 2, 8: 1}}))
    tracer.put(TracerBatch(2000, {}, traced={TOY_KEY: {7: 3}}))
    frame = part.frame({}, time.monotonic())
    assert frame.state == RUNNING and frame.traced[TOY_KEY] == {7: 5, 8: 1}
    assert not frame.partial and not frame.traced_status
    # A tick whose output the part refused: the others still count, and one line says so.
    tracer.put(TracerBatch(3000, {}, traced_problems={TOY_KEY: "toy: not understood"}))
    tracer.put(TracerBatch(4000, {}, traced={TOY_KEY: {7: 1}}))
    frame = part.frame({}, time.monotonic())
    assert frame.traced[TOY_KEY] == {7: 1}
    assert frame.traced_status == {TOY_KEY: "toy: not understood"}


def test_a_new_set_of_traced_parts_restarts_the_tracer_and_marks_the_frame_partial() -> None:
    tracers: list[FedTracer] = []

    def make() -> FedTracer:
        tracers.append(FedTracer(traced=part.traced, timed=part.timed))
        return tracers[-1]

    part = LatencyPart(make_tracer=make, check=lambda: (None, None))
    part.start()
    tracers[0].put(TracerBatch(1000, {}))
    assert not part.frame({}, time.monotonic()).partial
    assert not part.set_traced({})  # the same set: nothing restarts
    assert len(tracers) == 1
    assert part.set_traced({TOY_KEY: toy_program()})
    assert tracers[0].closed and len(tracers) == 2
    assert tracers[1].traced.keys() == {TOY_KEY} and tracers[1].timed
    tracers[1].put(TracerBatch(5000, {}, traced={TOY_KEY: {1: 1}}))
    frame = part.frame({}, time.monotonic())
    assert frame.partial and frame.traced[TOY_KEY] == {1: 1}
    tracers[1].put(TracerBatch(6000, {}, traced={TOY_KEY: {1: 2}}))
    assert not part.frame({}, time.monotonic()).partial  # only the frame of the change
    # No view shows latency any more, the part is still wanted: the block probes go.
    assert part.set_traced({TOY_KEY: toy_program()}, timed=False)
    assert len(tracers) == 3 and not tracers[2].timed
    tracers[2].put(TracerBatch(7000, {}, traced={TOY_KEY: {1: 4}}))
    frame = part.frame({"loop0": object()}, time.monotonic())
    assert frame.state == RUNNING and not frame.timed and not frame.devices
    assert frame.partial and frame.traced[TOY_KEY] == {1: 4}


def test_a_failed_tracer_says_why_for_each_traced_part() -> None:
    part = LatencyPart(check=lambda: ("latency needs root", None), traced={TOY_KEY: toy_program()})
    frame = part.frame({}, time.monotonic())
    assert frame.state == "failed" and frame.traced_status == {TOY_KEY: "latency needs root"}
    assert not frame.traced


def test_only_wanted_parts_that_trace_add_probes_each_asked_once() -> None:
    from iotop_plus.roots import Roots
    from iotop_plus.sampling.frame.part import TracedParts
    from tests.support.toy_trace import ToyGetppidPart

    asked: list[str] = []

    class Counting(ToyGetppidPart):
        def trace(self, roots: Roots) -> object:  # type: ignore[override]
            asked.append(self.key)
            return super().trace(roots)

    class Quiet(ToyGetppidPart):
        key = "toy_quiet"

        def trace(self, roots: Roots) -> None:
            return None

    traced = TracedParts(Roots())
    parts = [Counting(), Quiet()]
    assert traced.wanted(parts, frozenset()) == {}
    both = frozenset({TOY_KEY, "toy_quiet"})
    assert traced.wanted(parts, both).keys() == {TOY_KEY}
    assert traced.wanted(parts, both).keys() == {TOY_KEY}
    assert asked == [TOY_KEY]


def test_on_a_captured_tree_a_traced_part_is_told_why_it_is_not_traced() -> None:
    from iotop_plus.sampling.frame import registry
    from iotop_plus.sampling.frame.live import LiveSource
    from tests.support.toy_trace import ToyGetppidPart
    from tests.tui.canned import HOST_ROOTS, CannedSampler

    toy = ToyGetppidPart()
    registry.register(toy)
    source = LiveSource(HOST_ROOTS, CannedSampler(HOST_ROOTS))
    try:
        source.want(TOY_KEY, True)
        frame = source.next_frame()
        assert frame.latency is None and frame.get(toy) is None
        ctx = toy.readers[-1].last
        assert ctx is not None and ctx.traced is None
        assert (
            ctx.tracer_status == "latency is traced on the live host only, not on a captured tree"
        )
    finally:
        source.close()
        registry.unregister(TOY_KEY)
