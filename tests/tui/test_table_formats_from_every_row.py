"""The table writes each column in one format fitted to its largest figure over every row,
also the rows scrolled out of view (#17), worked out once a frame for all the columns (#25)."""

from __future__ import annotations

from iotop_plus.sampling.disks.diskstats import READ_MS, READS, SECTORS_READ
from iotop_plus.sampling.disks.rates import DeviceRates
from iotop_plus.sampling.topology.inventory import Inventory
from iotop_plus.tui.widgets.device_table import DeviceTable
from tests.tui.test_starting_device_and_busy_hidden import TableAlone


def _rates(reads: int, read_ms: int, sectors: int = 0) -> DeviceRates:
    after = [0] * 17
    after[READS], after[READ_MS], after[SECTORS_READ] = reads, read_ms, sectors
    return DeviceRates((0,) * 17, tuple(after), 1.0)


def _cells(t: DeviceTable, key: str) -> list[str]:
    index = 1 + [c.key for c in t.columns].index(key)
    lines = [t.render_line(y).text for y in range(2, 2 + min(len(t.rows), t.size.height - 2))]
    return [line.split()[index] for line in lines]


async def test_a_slow_device_out_of_view_sets_the_await_columns_format() -> None:
    """sdz (the last row, out of view) waited 12 s a read: every r_await gets one decimal;
    when it waits 9 s, two again, though the others' 12,000 ms of reads are over 10,000 (over
    4,000 reads: 3 ms each)."""
    rates = {f"sd{chr(97 + i)}": _rates(4_000, 12_000, 64) for i in range(25)}
    rates["sdz"] = _rates(1, 12_000)
    app = TableAlone()
    async with app.run_test(size=(120, 12)) as pilot:
        t = app.query_one(DeviceTable)
        t.update_devices(rates, Inventory({}), frozenset(rates), {}, True)
        await pilot.pause()
        assert "sdz" not in " ".join(t.render_line(y).text for y in range(t.size.height))
        assert set(_cells(t, "r_await")) == {"3.0"}  # 12000.0 sets one decimal for all
        assert set(_cells(t, "r_s")) == {"4000.00"}
        rates["sdz"] = _rates(1, 9_000)  # now 9000.00 ms: two decimals again
        t.update_devices(rates, Inventory({}), frozenset(rates), {}, False)
        await pilot.pause()
        assert set(_cells(t, "r_await")) == {"3.00"}
