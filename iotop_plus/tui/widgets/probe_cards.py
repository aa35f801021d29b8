"""What the probe panel shows of finished probes: the result card and the comparison of two."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from iotop_plus.probe.history import ProbeRecord, compare
from iotop_plus.probe.results import ProbeResult


def _row(table: Table, *cells: str | Text) -> None:
    """Add a row whose strings are plain text: paths, device names and fio's words may
    hold ``[``, which Rich would read as markup."""
    table.add_row(*(Text(c) if isinstance(c, str) else c for c in cells))


def result_card(result: ProbeResult) -> Table:
    """The result card: figures, percentiles, CPU, device util, hints, placement."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    p = result.params
    _row(grid, "result", Text(f"{result.title} on {result.target}", style="bold"))
    _row(grid, "", f"{p.bs} QD{p.iodepth} x{p.numjobs} {p.ioengine} direct={int(p.direct)}")
    if result.quick_label:
        _row(grid, "", Text(result.quick_label, style="yellow"))
    for note in result.notes:
        _row(grid, "note", note)
    _row(grid, "IOPS", f"{result.iops:,.0f}")
    _row(grid, "bandwidth", f"{result.bw_kib_s / 1024:,.1f} MiB/s")
    _row(grid, "mean lat", f"{result.mean_clat_us:,.1f} µs (clat)")
    for name, d in (("read", result.read), ("write", result.write)):
        if d is None:
            continue
        _row(
            grid,
            name,
            f"{d.iops:,.0f} IOPS ({d.iops_min:,.0f}-{d.iops_max:,.0f}), "
            f"{d.bw_kib_s / 1024:,.1f} MiB/s ({d.bw_min_kib_s / 1024:,.1f}-"
            f"{d.bw_max_kib_s / 1024:,.1f})",
        )
        _row(
            grid,
            "  clat µs",
            " ".join(f"{label} {v:,.0f}" for label, v in d.clat.percentiles_us),
        )
        if d.block is not None:
            _row(
                grid,
                "  device µs",
                " ".join(f"{label} {v:,.0f}" for label, v in d.block.percentiles_us)
                + f" max {d.block.max_us:,.0f}",
            )
        _row(grid, "  slat", f"{d.slat_mean_us:,.1f} µs")
    fw = result.flush_write
    if fw is not None:  # writes with a preflush or FUA: journal commits, fsyncs' flushes
        _row(
            grid,
            "flush+write µs",
            " ".join(f"{label} {v:,.0f}" for label, v in fw.percentiles_us)
            + f" max {fw.max_us:,.0f} ({fw.count:,} requests)",
        )
    if result.fsync is not None:
        _row(
            grid,
            "fsync µs",
            f"mean {result.fsync.mean_us:,.0f} "
            + " ".join(f"{label} {v:,.0f}" for label, v in result.fsync.percentiles_us),
        )
    _row(grid, "CPU", f"usr {result.usr_cpu_pct:.1f}% sys {result.sys_cpu_pct:.1f}%")
    for u in result.disk_util:
        _row(grid, "device", f"{u.name} util {u.util_pct:.0f}% ({u.read_ios + u.write_ios:,} I/Os)")
    if result.placement:
        _row(grid, "reference", result.placement)
    for hint in result.hints:
        _row(grid, Text("hint", style="yellow"), hint.text)
    return grid


def comparison_table(a: ProbeRecord, b: ProbeRecord) -> Table:
    """Two probes side by side with deltas."""
    table = Table(title=Text(f"{a.label}  vs  {b.label}"), expand=True, pad_edge=False)
    table.add_column("", no_wrap=True)
    table.add_column(f"#{a.number}", justify="right")
    table.add_column(f"#{b.number}", justify="right")
    table.add_column("delta", justify="right")
    for row in compare(a, b):
        style = {True: "green", False: "red", None: ""}[row.better]
        _row(table, row.label, row.a, row.b, Text(row.delta, style=style))
    return table
