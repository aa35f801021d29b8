"""What a replay and ``--read-only`` refuse, and the one line that says why.

The main screen holds one :class:`Refusals`, made from facts known when it is built (a replay
or not, ``--read-only`` or not), and passes it to what needs it: its own tuning and probe keys,
the side panels' keys and the deferred tabs (which show only the refusal on Tune and Probe).
"""

from __future__ import annotations

from collections.abc import Callable

REPLAY_REFUSAL = "replay: tuning and probes are off (these are recorded frames, not this host now)"
"""The one line said when a key would tune or probe during a replay."""

READ_ONLY_REFUSAL = "read-only: no tuning, probes or experiments (started with --read-only)"
"""The one line said when a key would tune, probe or experiment under ``--read-only``."""

TUNING_ACTIONS = frozenset({"tune", "undo_setting", "revert_settings", "experiment"})
"""Main-screen actions a replay and read-only refuse."""

SYSTEM_ACTIONS = frozenset({"tab-processes:toggle_delayacct"})
"""Panel actions that change the system (a sysctl): read-only refuses them; in a replay they
act on this host, as they say."""

REFUSED_TABS = frozenset({"tab-tune", "tab-probe"})
"""Side-panel tabs a replay and read-only show only the refusal on."""


class Refusals:
    """Which actions are refused, and why.

    Args:
        replay: The frames come from a recording, not from this host now.
        read_only: Started with ``--read-only``.
        say: Shows one warning line (the reason, when an action is refused).
    """

    def __init__(self, *, replay: bool, read_only: bool, say: Callable[[str], object]) -> None:
        self.replay_reason = REPLAY_REFUSAL if replay else None
        """Why tuning and probes are off (a replay), or None."""
        self.reason = self.replay_reason or (READ_ONLY_REFUSAL if read_only else None)
        """Why tuning, probes and experiments are off (a replay, ``--read-only``), or None."""
        self.say = say

    def refused(self, action: str) -> bool:
        """Whether ``action`` is refused (a replay, read-only); says why in one line if so.

        ``action`` is a screen action or ``tab:action`` for a side-panel tab's command.
        """
        if self.reason is None:
            return False
        tab = action.split(":", 1)[0] if ":" in action else None
        system = action in SYSTEM_ACTIONS and self.replay_reason is None
        if action not in TUNING_ACTIONS and tab not in REFUSED_TABS and not system:
            return False
        self.say(self.reason)
        return True
