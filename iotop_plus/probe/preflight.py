"""What an experiment checks before it changes or runs anything.

The target and fio are planned first, a dead run's leftover on the device refuses the start
(its value is not the original), and A/B values the kernel would store as the same one are
refused before any run.
"""

from __future__ import annotations

from iotop_plus.devices.journal import Journal, JournalError
from iotop_plus.devices.settings import page_kib, predict_effective
from iotop_plus.devices.tuner import Tuner
from iotop_plus.probe.presets import Preset, ProbeParams
from iotop_plus.probe.run_types import ProbeError
from iotop_plus.probe.runner import ProbeRunner
from iotop_plus.probe.target import ProbeTarget, TargetError, plan_target
from iotop_plus.roots import Roots


class ExperimentError(Exception):
    """An experiment cannot start or failed; the message is one plain line."""


def plan_first(
    runner: ProbeRunner, target: str, preset: Preset, params: ProbeParams
) -> ProbeTarget:
    """Check fio and the target before anything runs or changes."""
    try:
        runner.find_fio()
        return plan_target(target, preset, params, runner.roots)
    except (ProbeError, TargetError) as exc:
        raise ExperimentError(str(exc)) from None


def refuse_leftovers(journal: Journal | None, roots: Roots, device: str | None) -> None:
    """Refuse to start while a dead run's change is left on ``device`` (its value is not the
    original).

    Raises:
        ExperimentError: naming each setting, its value and the original.
    """
    if journal is None or device is None:
        return
    try:
        refusal = journal.leftover_refusal(roots, device)
    except JournalError as exc:
        raise ExperimentError(str(exc)) from None
    if refusal:
        raise ExperimentError(refusal)


def refuse_equal_effective(tuner: Tuner, device: str, setting: str, values: list[str]) -> None:
    """Refuse values the kernel would store as the same one (read-ahead 1 and 2 are both 0)."""
    current = tuner.read_one(device, setting)
    predicted = [predict_effective(tuner.roots, current, v) for v in values]
    why = {
        "read_ahead_kb": f"rounded down to whole {page_kib()} KiB pages",
        "nr_requests": "0-3 become 4",
    }.get(setting, "the kernel's rounding")
    for i, first in enumerate(predicted):
        for j in range(i + 1, len(values)):
            if first is not None and predicted[j] == first:
                raise ExperimentError(
                    f"{device} {setting}: {values[i]} and {values[j]} both become {first} "
                    f"({why}): nothing to compare"
                )


__all__ = [
    "ExperimentError",
    "plan_first",
    "refuse_equal_effective",
    "refuse_leftovers",
]
