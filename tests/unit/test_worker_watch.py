"""WorkerWatch: the first worker thread that dies stops the command with one line."""

from __future__ import annotations

import threading

from iotop_plus.commands.workers import WorkerWatch


def test_the_watch_takes_the_first_death_once_and_gives_the_hook_back(
    capsys: object,
) -> None:
    stop = threading.Event()
    before = threading.excepthook
    with WorkerWatch(stop) as workers:

        def die(text: str) -> None:
            raise ValueError(text)

        for text in ("bad\x1b]0;title\x07 value\nsecond line", "another"):
            thread = threading.Thread(target=die, args=(text,), name="iotop-plus-serve")
            thread.start()
            thread.join()
        ended = threading.Thread(target=lambda: (_ for _ in ()).throw(SystemExit()))
        ended.start()
        ended.join()
    assert threading.excepthook is before
    assert stop.is_set()
    assert workers.exit_code(0, 1) == 1
    assert workers.failure == (
        "the sampler failed (ValueError: bad\x1b]0;title\x07 value); stopping (exit 1) so that it"
        " can be restarted"
    )
    err = capsys.readouterr().err  # type: ignore[attr-defined]
    assert err.startswith("iotop-plus: error: the sampler failed (ValueError: bad")
    assert err.endswith(" value); stopping (exit 1) so that it can be restarted\n")
    assert err.count("\n") == 1 and "\x1b" not in err and "\x07" not in err
