"""The TUI's tuner is made when first asked for (its modules are not on the way to the first
figures), once, whichever thread asks first."""

from __future__ import annotations

import threading

from iotop_plus.devices.journal import Journal
from iotop_plus.devices.tuner import Tuner
from iotop_plus.roots import Roots
from iotop_plus.tui.app import later_tuner


def test_a_given_tuner_is_the_one_answered() -> None:
    tuner = Tuner(Roots(), Journal(None))
    get = later_tuner(tuner, Roots(), is_root=False)
    assert get() is tuner and get() is tuner


def test_the_tuner_is_made_when_first_asked_for_and_only_once() -> None:
    made: list[Tuner] = []

    def make() -> Tuner:
        made.append(Tuner(Roots(), Journal(None)))
        return made[-1]

    get = later_tuner(make, Roots(), is_root=False)
    assert made == []  # nothing made until someone asks
    threads = 8
    start = threading.Barrier(threads)
    got: list[Tuner] = []

    def ask() -> None:
        start.wait()
        got.append(get())

    workers = [threading.Thread(target=ask) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(made) == 1 and len(got) == threads
    assert all(t is made[0] for t in got)


def test_without_one_given_a_tuner_without_a_journal_is_made() -> None:
    get = later_tuner(None, Roots(), is_root=False)
    tuner = get()
    assert isinstance(tuner, Tuner) and get() is tuner
    assert tuner.journal.state is None  # nothing written anywhere
