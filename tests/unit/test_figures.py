"""The registry of figures: iostat's own names, and every view reads its names from it."""

from __future__ import annotations

from iotop_plus.commands import snapshot_output
from iotop_plus.sampling.disks import figures
from iotop_plus.sampling.disks.rates import COLUMNS, DeviceRates
from iotop_plus.sampling.store.timeline import METRICS

# As sysstat 12.6.1 prints them (`iostat -x` header, `iostat -x -o JSON` keys); written out
# here rather than read from the registry, so a slip in the registry cannot pass unseen.
IOSTAT_HEADER = [
    "r/s",
    "rkB/s",
    "rrqm/s",
    "%rrqm",
    "r_await",
    "rareq-sz",
    "w/s",
    "wkB/s",
    "wrqm/s",
    "%wrqm",
    "w_await",
    "wareq-sz",
    "d/s",
    "dkB/s",
    "drqm/s",
    "%drqm",
    "d_await",
    "dareq-sz",
    "f/s",
    "f_await",
    "aqu-sz",
    "%util",
]
IOSTAT_JSON_KEYS = [
    "r/s",
    "rkB/s",
    "rrqm/s",
    "rrqm",
    "r_await",
    "rareq-sz",
    "w/s",
    "wkB/s",
    "wrqm/s",
    "wrqm",
    "w_await",
    "wareq-sz",
    "d/s",
    "dkB/s",
    "drqm/s",
    "drqm",
    "d_await",
    "dareq-sz",
    "f/s",
    "f_await",
    "aqu-sz",
    "util",
]


def test_the_registry_has_iostats_names_in_iostats_order() -> None:
    assert [f.title for f in figures.IOSTAT_FIGURES] == IOSTAT_HEADER
    assert [f.json_key for f in figures.IOSTAT_FIGURES] == IOSTAT_JSON_KEYS
    assert figures.FIGURES[-1].key == "in_flight" and not figures.FIGURES[-1].iostat


def test_every_figure_is_a_devicerates_attribute_with_a_unit_and_a_meaning() -> None:
    assert list(COLUMNS) == [f.key for f in figures.FIGURES]
    for fig in figures.FIGURES:
        assert hasattr(DeviceRates, fig.key), fig.key
        assert fig.unit and fig.meaning and fig.misleads
    assert figures.figure("util").title == "%util"


def test_every_note_is_explained_once_in_the_help() -> None:
    covered = [f for figs, _note in figures.notes() for f in figs]
    every = (*figures.FIGURES, *figures.LATENCY_FIGURES)
    assert sorted(f.key for f in covered) == sorted(f.key for f in every)


def test_snapshot_headers_come_from_the_registry() -> None:
    assert [key for key, _ in snapshot_output.IOSTAT_COLUMNS] == IOSTAT_JSON_KEYS
    table = [snapshot_output._TABLE_HEADERS.get(k, k) for k in IOSTAT_JSON_KEYS]
    assert table == IOSTAT_HEADER


def test_every_charted_figure_is_kept_in_the_frame_store() -> None:
    from iotop_plus.tui.widgets.charts import CHARTS

    for spec in CHARTS:
        for metric, label in spec.series:
            assert metric in METRICS
            assert label == figures.figure(metric).title
