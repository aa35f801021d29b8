"""Saturated and capped: the device's own state over the last frames, and what is below it.

``saturated`` holds when any of these does:

* the queue is full: aqu-sz >= :data:`QUEUE_FULL` of ``nr_requests`` (high);
* in at least 4 of the last 5 frames (the judged one among them) the device was >=
  :data:`BUSY_PCT` % busy with aqu-sz >= :data:`DEPTH` and await >= :data:`OVER_QUIET` times
  its own quiet baseline (:mod:`iotop_plus.why.lookback`): steady or rising (high);
* with no baseline (``snapshot -c 1``, a device never quiet since we started), on a device
  that serves one request at a time (a loop device without direct I/O, a spinning disk), the
  same busy time and depth with await >= :data:`OVER_QUIET` times the service time
  util / (r/s + w/s) in the judged frame (medium).

``capped`` is ``saturated`` with a reason below (it replaces ``saturated``): a device right
underneath (a loop device's backing file's device, a dm or md device's slaves) has a cgroup
throttled on it or is itself saturated, or the device (or one below it) is a network volume
with a provisioned cap (:data:`NETWORK_VOLUME`). Its evidence names the device ``below``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from iotop_plus.why.lookback import Lookback, await_ms

if TYPE_CHECKING:
    from iotop_plus.sampling.cgroups.limits import DeviceLimit
    from iotop_plus.sampling.disks.rates import DeviceRates
    from iotop_plus.sampling.frame.model import Frame
    from iotop_plus.sampling.topology.inventory import BlockDevice, Inventory

QUEUE_FULL = 0.9
"""aqu-sz at this share of ``nr_requests``: the queue is full."""
BUSY_PCT = 90.0
"""%util from which a deep, slow queue counts as saturation."""
DEPTH = 4.0
"""aqu-sz from which the queue is deep."""
OVER_QUIET = 4.0
"""Await at this many times the quiet baseline (or the service time): requests wait."""
OF_LAST = (4, 5)
"""Saturated in at least this many of the last that many frames."""
NETWORK_VOLUME = re.compile(
    r"Amazon Elastic Block Store|PersistentDisk|nvme_card-pd|^Virtual Disk$|"
    r"MSFT NVMe Accelerator",
    re.IGNORECASE,
)
"""Model strings of network volumes with a provisioned IOPS and throughput cap: Amazon EBS
(NVMe ``Amazon Elastic Block Store``), Google Persistent Disk (SCSI ``PersistentDisk``, NVMe
``nvme_card-pd``), Azure managed disks (SCSI ``Virtual Disk`` of vendor ``Msft``, NVMe
``MSFT NVMe Accelerator v1.0``)."""


class Finding(NamedTuple):
    """A cause found here, before it becomes a :class:`~iotop_plus.why.diagnosis.Cause`."""

    cause: str
    evidence: dict[str, Any]
    confidence: str
    text: str


def _r(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def nr_requests(frame: Frame, device: str) -> int | None:
    """``queue/nr_requests`` of ``device`` (a partition's is its disk's)."""
    nr = frame.nr_requests.get(device)
    if nr is None:
        dev = frame.inventory.get(device)
        if dev is not None and dev.parent:
            nr = frame.nr_requests.get(dev.parent)
    return nr


def serves_one_at_a_time(dev: BlockDevice | None) -> bool:
    """A loop device without direct I/O (its worker reads the file one request after the
    other) or a spinning disk (one head): util / IOPS is then the time a request takes."""
    if dev is None:
        return False
    if dev.kind == "loop":
        return dev.loop_dio is False
    return dev.media_class == "hdd"


def _deep(rates: DeviceRates, than_ms: float) -> bool:
    return (
        rates.util >= BUSY_PCT and rates.aqu_sz >= DEPTH and await_ms(rates) >= OVER_QUIET * than_ms
    )


def saturated(frame: Frame, device: str, lookback: Lookback) -> Finding | None:
    """The ``saturated`` finding for ``device`` in ``frame``, or None."""
    rates = frame.rates.get(device)
    if rates is None:
        return None
    nr = nr_requests(frame, device)
    waited = await_ms(rates)
    evidence: dict[str, Any] = {
        "aqu-sz": _r(rates.aqu_sz),
        "nr_requests": nr,
        "%util": _r(rates.util),
        "await": _r(waited),
    }
    if nr and rates.aqu_sz >= QUEUE_FULL * nr:
        text = f"saturated: queue {rates.aqu_sz:.0f} of nr_requests {nr}"
        return Finding("saturated", evidence, "high", text)
    baseline = lookback.baseline(device)
    frames = [*lookback.rates(device)[-(OF_LAST[1] - 1) :], rates]
    if baseline is not None and len(frames) >= OF_LAST[0]:
        hits = sum(_deep(r, baseline) for r in frames)
        if not _deep(rates, baseline) or hits < OF_LAST[0]:
            return None
        evidence |= {"quiet_await": _r(baseline), "frames": f"{hits} of {len(frames)}"}
        text = (
            f"saturated: {rates.util:.0f} % busy, queue {rates.aqu_sz:.1f}, await "
            f"{waited:.1f} ms ({waited / baseline:.0f}x its quiet {baseline:.2f} ms) "
            f"in {hits} of the last {len(frames)} frames"
        )
        return Finding("saturated", evidence, "high", text)
    ios = rates.r_s + rates.w_s
    if baseline is not None or ios <= 0 or not serves_one_at_a_time(frame.inventory.get(device)):
        return None
    service = rates.util / 100 * 1000 / ios
    if not _deep(rates, service):
        return None
    evidence["service_ms"] = _r(service, 3)
    text = (
        f"saturated: {rates.util:.0f} % busy, queue {rates.aqu_sz:.1f}, await {waited:.1f} ms "
        f"against {service:.2f} ms of service per request"
    )
    return Finding("saturated", evidence, "medium", text)


def below(inventory: Inventory, name: str) -> tuple[str, ...]:
    """The whole devices right underneath ``name``: a loop device's backing file's device, a
    dm or md device's slaves (a partition counts as its disk)."""
    dev = inventory.get(name)
    if dev is None:
        return ()
    under: Iterable[str] = (
        (dev.loop_backing_device,) if dev.loop_backing_device is not None else dev.slaves
    )
    found: list[str] = []
    for each in under:
        part = inventory.get(each)
        whole = part.parent if part is not None and part.parent else each
        if whole != name and whole not in found:
            found.append(whole)
    return tuple(found)


def _bottom(inventory: Inventory, name: str, depth: int = 8) -> list[str]:
    """``name`` and every device below it, down to the disks (a bounded walk)."""
    seen = [name]
    for each in seen:
        if len(seen) > depth * 4:
            break
        seen += [u for u in below(inventory, each) if u not in seen]
    return seen


def network_volume(inventory: Inventory, name: str) -> tuple[str, str] | None:
    """(device, model) of the network volume ``name`` is, or sits on; None when not one."""
    for each in _bottom(inventory, name):
        dev = inventory.get(each)
        if dev is None:
            continue
        whole = inventory.get(dev.parent) if dev.parent else dev
        model = (whole.model if whole is not None else None) or ""
        if NETWORK_VOLUME.search(model.strip()):
            return each, model.strip()
    return None


def capped(
    frame: Frame,
    device: str,
    lookback: Lookback,
    found: Finding,
    throttled_on: Callable[[str], Sequence[DeviceLimit]] | None,
) -> Finding | None:
    """``found`` (saturated) as ``capped`` when a reason below holds, else None.

    ``throttled_on``: a device's throttled cgroup limits (None: throttling not checked)."""
    inventory = frame.inventory
    for under in below(inventory, device):
        limits = throttled_on(under) if throttled_on is not None else ()
        if limits:
            limit = limits[0]
            key = limit.binding
            assert key is not None
            share = limit.usage[key] * 100
            evidence = found.evidence | {
                "below": under,
                "below_cause": "throttled",
                "cgroup": limit.cgroup,
                "limit": key,
                "limit_value": limit.limits.get(key),
                "used_pct": _r(share, 1),
            }
            text = (
                f"capped by {under} below: {limit.cgroup}'s {limit.source} limit "
                f"{key} {limit.limits.get(key)} ({share:.0f} % used); {found.text}"
            )
            return Finding("capped", evidence, found.confidence, text)
        if saturated(frame, under, lookback) is not None:
            evidence = found.evidence | {"below": under, "below_cause": "saturated"}
            text = f"capped by {under} below, itself saturated; {found.text}"
            return Finding("capped", evidence, found.confidence, text)
    volume = network_volume(inventory, device)
    if volume is not None:
        where, model = volume
        evidence = found.evidence | {
            "below": where,
            "below_cause": "network volume",
            "model": model,
        }
        text = (
            f"capped: {where} is a network volume ({model}) at its provisioned limit; {found.text}"
        )
        return Finding("capped", evidence, found.confidence, text)
    return None
