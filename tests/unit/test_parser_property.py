"""Property tests: garbage never crashes the parsers, and rates are never negative or huge."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from iotop_plus.sampling.disks.diskstats import (
    MS_WRAP,
    DiskCounters,
    ParseProblem,
    _parse_line,
    _parse_uniform,
    parse_diskstats,
    parse_sys_stat,
)
from iotop_plus.sampling.disks.rates import COLUMNS, compute_all, compute_rates
from tests.support.budget import examples

#: Tokens that look like diskstats fields, plus the ones that break naive parsers.
TOKENS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.sampled_from(
        ["sda", "nvme0n1p1", "dm-0", "", "-", "0x10", "1e3", "١٢", "nan", "+5", "\x00", "\udcff"]
    ),
    st.text(max_size=8),
)
LINE = st.lists(TOKENS, max_size=24).map(" ".join)
DISKSTATS_TEXT = st.one_of(
    st.text(max_size=2000),
    st.lists(LINE, max_size=30).map("\n".join),
    st.binary(max_size=500).map(lambda b: b.decode("latin-1")),
)


@settings(max_examples=examples(400))
@given(DISKSTATS_TEXT)
def test_parse_diskstats_never_raises(text: str) -> None:
    problems: list[ParseProblem] = []
    counters = parse_diskstats(text, problems=problems)
    for name, c in counters.items():
        assert c.name == name
        assert len(c.values) == 17 and min(c.values) >= 0
        assert c.n_fields in (4, 11, 15, 17)
    for p in problems:
        assert p.line_no >= 1 and len(p.line) <= 120 and p.reason
        assert "\n" not in str(p)
    # With a cache, the result is the same, every time.
    cache: dict[str, DiskCounters] = {}
    assert parse_diskstats(text, cache=cache) == counters
    assert parse_diskstats(text, cache=cache) == counters


@settings(max_examples=examples(400))
@given(st.one_of(st.text(max_size=300), LINE))
def test_parse_sys_stat_raises_only_value_error(text: str) -> None:
    try:
        c = parse_sys_stat(text, "x")
    except ValueError as exc:
        assert "\n" not in str(exc)
        return
    assert c.n_fields in (11, 15, 17) and min(c.values) >= 0


COUNTER = st.integers(min_value=0, max_value=2**64 - 1)
MS = st.integers(min_value=0, max_value=MS_WRAP - 1)
_MS_INDEX = {3, 7, 9, 10, 14, 16}


def _counters(values: list[int]) -> DiskCounters:
    return DiskCounters(8, 0, "sda", tuple(values), 17)


VALUES = st.tuples(*[MS if i in _MS_INDEX else COUNTER for i in range(17)]).map(list)


@settings(max_examples=examples(500))
@given(VALUES, VALUES, st.floats(min_value=0.05, max_value=3600))
def test_rates_from_arbitrary_pairs_are_none_or_sane(
    before: list[int], after: list[int], elapsed: float
) -> None:
    rates = compute_rates(_counters(before), _counters(after), elapsed)
    if rates is None:
        return
    for name in COLUMNS:
        value = float(getattr(rates, name))
        assert value >= 0, name
    # Per-I/O and percentage figures are bounded by the inputs, whatever they are.
    assert 0 <= rates.rrqm_pct <= 100 + 1e-9 and 0 <= rates.wrqm_pct <= 100 + 1e-9
    assert rates.util <= (MS_WRAP - 1) / elapsed / 10


@settings(max_examples=examples(300))
@given(VALUES, st.lists(st.integers(min_value=0, max_value=10**6), min_size=17, max_size=17))
def test_plausible_intervals_give_plausible_rates(before: list[int], step: list[int]) -> None:
    """A device moving by at most 10**6 per field in a second never reports more than that."""
    after = [
        (b + s) % MS_WRAP if i in _MS_INDEX else b + s
        for i, (b, s) in enumerate(zip(before, step, strict=True))
    ]
    rates = compute_rates(_counters(before), _counters(after), 1.0)
    assert rates is not None
    assert rates.r_s <= 10**6 and rates.rkb_s <= 10**6 / 2
    assert rates.util <= 10**6 / 10 and rates.aqu_sz <= 10**6 / 1000


NAMES = st.sampled_from(["sda", "sdb", "nvme0n1p1", "dm-0", "md127", "loop7", "3", "+4", "é1"])
#: Counter text: mostly plain numbers, sometimes what int() reads but the kernel never prints.
COUNTER_TEXT = st.one_of(
    st.integers(-1, 2**40).map(str),
    st.integers(-1, 2**40).map(str),
    st.integers(0, 2**64 + 1).map(str),
    st.sampled_from(["0" * 21, "0" * 19 + "1", "+7", "1_0", "-0", "١٢", "|", "x"]),
)
WELL_FORMED = st.builds(
    lambda major, minor, name, values, width: " ".join(
        map(str, [major, minor, name, *values[: width - 3]])
    ),
    st.integers(0, 300),
    st.integers(0, 300),
    NAMES,
    st.lists(COUNTER_TEXT, min_size=17, max_size=17),
    st.sampled_from([20, 20, 20, 18, 14, 7, 19, 21]),
)
#: A 20-field line of plain numbers, now and then one at or just above 2^64.
PLAIN = st.builds(
    lambda major, name, values: " ".join(map(str, [major, 0, name, *values])),
    st.integers(0, 300),
    NAMES,
    st.lists(
        st.one_of(st.integers(0, 10**6), st.integers(2**64 - 2, 2**64 + 1)),
        min_size=17,
        max_size=17,
    ),
)
#: A line with one token too many or too few before the name: beside a line one token
#: shorter (or longer), it would line up with the others in a split of the whole text.
SHIFTED = st.builds(
    lambda head, name, values: " ".join(map(str, [*head, name, *values])),
    st.lists(st.integers(0, 300), min_size=1, max_size=3),
    NAMES,
    st.lists(st.integers(0, 2**40), min_size=15, max_size=18),
)


@settings(max_examples=examples(600))
@given(st.lists(st.one_of(WELL_FORMED, WELL_FORMED, SHIFTED, LINE), max_size=12))
def test_bulk_parse_equals_line_by_line(lines: list[str]) -> None:
    """The one-format fast path gives exactly what parsing each line alone gives."""
    reference: dict[str, DiskCounters] = {}
    for line in lines:
        if not line.split():
            continue
        outcome = _parse_line(line)
        if isinstance(outcome, DiskCounters) and outcome.name not in reference:
            reference[outcome.name] = outcome
    assert parse_diskstats("\n".join(lines)) == reference


@settings(max_examples=examples(600))
@given(st.lists(st.one_of(PLAIN, PLAIN, WELL_FORMED, SHIFTED, LINE), min_size=1))
def test_the_bulk_path_alone_is_none_or_each_line_parsed_alone(lines: list[str]) -> None:
    """parse_diskstats sends fewer than 8 changed lines one by one, so the bulk path is
    held to the line-by-line parse here directly, on any number of lines."""
    bulk = _parse_uniform(lines)
    if bulk is not None:
        assert bulk == [_parse_line(line) for line in lines]


@settings(max_examples=examples(300))
@given(
    st.lists(st.lists(st.one_of(WELL_FORMED, WELL_FORMED, SHIFTED, LINE), max_size=8), max_size=4)
)
def test_a_cache_carried_across_ticks_changes_nothing_but_object_identity(
    ticks: list[list[str]],
) -> None:
    """Parsing tick after tick with one cache gives what a fresh parse gives, and a line
    seen on the previous tick keeps its counters object (an idle device)."""
    cache: dict[str, DiskCounters] = {}
    previous: dict[str, DiskCounters] = {}
    for lines in ticks:
        text = "\n".join(lines)
        problems: list[ParseProblem] = []
        fresh_problems: list[ParseProblem] = []
        counters = parse_diskstats(text, problems=problems, cache=cache)
        assert counters == parse_diskstats(text, problems=fresh_problems)
        assert problems == fresh_problems
        for line, c in cache.items():
            if line in previous:
                assert c is previous[line]
        assert set(cache.values()) == set(counters.values())
        previous = dict(cache)


NAME4 = st.sampled_from(["sda", "sdb", "sdc", "sdd"])


@st.composite
def _tick_pairs(draw: st.DrawFn) -> tuple[dict[str, DiskCounters], dict[str, DiskCounters]]:
    """Two samples as a host gives them: most devices move forward, some are idle (the same
    object), some are new, gone, reset in one field, or another device under the name."""
    prev: dict[str, DiskCounters] = {}
    cur: dict[str, DiskCounters] = {}
    for name in draw(st.lists(NAME4, unique=True)):
        values = tuple(draw(st.lists(st.integers(5, 9), min_size=17, max_size=17)))
        prev[name] = DiskCounters(8, 0, name, values, 17)
    for name in draw(st.lists(NAME4, unique=True)):
        before = prev.get(name)
        if before is None:
            cur[name] = DiskCounters(8, 1, name, (0,) * 17, 17)
            continue
        kind = draw(st.sampled_from(["forward", "forward", "idle", "same values", "back", "id"]))
        if kind == "idle":
            cur[name] = before
        elif kind == "same values":
            cur[name] = DiskCounters(8, 0, name, before.values, 17)
        elif kind == "id":
            field = draw(st.sampled_from(["major", "minor"]))
            cur[name] = before._replace(major=9) if field == "major" else before._replace(minor=9)
        else:
            step = draw(st.lists(st.integers(0, 2), min_size=17, max_size=17))
            if kind == "back":
                step[draw(st.integers(0, 16))] = -3
            values = tuple(v + s for v, s in zip(before.values, step, strict=True))
            cur[name] = DiskCounters(8, 0, name, values, 17)
    return prev, cur


@settings(max_examples=examples(500))
@given(_tick_pairs(), st.sampled_from([1.0, 0.5, 0.0, -1.0]))
def test_compute_all_gives_compute_rates_for_each_device(
    pair: tuple[dict[str, DiskCounters], dict[str, DiskCounters]], elapsed: float
) -> None:
    """The inlined loop agrees with compute_rates: new devices, resets of any one field, a
    changed major:minor, and the same counters object (an idle device) handed back."""
    prev, cur = pair
    rates = compute_all(prev, cur, elapsed)
    assert list(rates) == list(cur)
    for name, after in cur.items():
        before = prev.get(name)
        expected = None if before is None else compute_rates(before, after, elapsed)
        assert rates[name] == expected
