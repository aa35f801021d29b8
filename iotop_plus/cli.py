"""Command line: ``iotop-plus`` (the TUI) and the headless subcommands.

The TUI is imported lazily, so the headless commands never load Textual.
"""

from __future__ import annotations

import argparse
import difflib
import errno
import importlib
import itertools
import os
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from iotop_plus import __version__
from iotop_plus.commands.common import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    CheckedOutput,
    OutputError,
    UsageError,
    positive_float,
)

if TYPE_CHECKING:
    from iotop_plus.roots import Roots

#: Subcommands and their one-line help, in ``--help`` order. Each is the module
#: ``iotop_plus.commands.NAME`` with ``add_parser(subparsers)`` (the parser sets ``run``). Only
#: the module of the subcommand typed is imported; the others stand in ``--help`` as their name
#: and this line (a test checks the lines against the modules'), so ``--version``, ``--help``
#: and ``snapshot`` load nothing they do not use.
COMMANDS: dict[str, str] = {
    "snapshot": "print iostat -x figures for an interval and exit",
    "probe": "run a safe fio probe (a preset) on a directory or a device",
    "set": "change queue settings (read-ahead, scheduler...) with read-back, all or nothing",
    "top": "print the processes doing I/O (like iotop -b -o) and exit",
    "sweep": "queue-depth sweep: IOPS and latency at QD 1, 2, 4 ... (read-only)",
    "ab": "A/B test a queue setting: alternate values, run a probe, compare medians",
    "restore": "put back queue settings that a run which died left changed (from the journal)",
    "record": "record every interval's counters to files (for replay and bundles)",
    "replay": "the TUI on a recording, a bundle or the recording directory",
    "bundle": "write the last minutes of the recording to one file, for an incident ticket",
    "diff": "what changed between two windows of a recording, ranked, with evidence",
    "serve": "Prometheus exporter: disk counters, queue settings, pressure, cgroups, probes",
    "fleet": "many hosts through Prometheus: hosts x devices, worst first",
}

#: The subcommands that take ``--interval`` (a test checks it against their parsers).
INTERVAL_COMMANDS = ("snapshot", "top", "record", "replay", "serve")


def command_module(name: str) -> Any:
    """The module of subcommand ``name`` (imported now if it was not)."""
    return importlib.import_module(f"iotop_plus.commands.{name}")


#: A subcommand's ``--interval`` default while parsing: "not given" (see ``_Parser``).
_NOT_GIVEN: Any = object()


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error and exit code 2."""

    commands: Iterable[str] = ()
    """The subcommand names (set on the top-level parser)."""
    intervals: dict[str, tuple[argparse.Action, Any]] | None = None
    """Top-level parser only: each subcommand's own ``--interval`` action and its default."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if self.intervals is not None:
            self._place_interval(parsed)
        return parsed, extras

    def _place_interval(self, args: argparse.Namespace) -> None:
        """Give ``--interval S`` typed before the subcommand to the one that samples.

        Without a subcommand it is the TUI's (``args.interval``, 0.25 to 10 s). A subcommand
        with an interval of its own takes it, checked by that subcommand's own type; one
        without an interval refuses it, and so does one given a different value after it.
        """
        text = args.global_interval
        command = getattr(args, "command", None)
        if command is None:
            args.interval = None if text is None else self._tui_interval(text)
            return
        assert self.intervals is not None
        if command not in self.intervals:
            if text is not None:
                takers = ", ".join(INTERVAL_COMMANDS)
                self.error(
                    f"--interval {text} before {command!r}: {command} takes no interval "
                    f"(the TUI and {takers} do)"
                )
            return
        action, default = self.intervals[command]
        own = getattr(args, action.dest)
        if text is None:
            if own is _NOT_GIVEN:
                setattr(args, action.dest, default)
            return
        try:
            value = action.type(text) if callable(action.type) else text
        except (argparse.ArgumentTypeError, TypeError, ValueError) as exc:
            self.error(f"argument --interval/-i: {exc}")
        if own is not _NOT_GIVEN and own != value:
            self.error(f"--interval given twice: {text} before {command!r}, {own:g} after it")
        setattr(args, action.dest, value)

    def _tui_interval(self, text: str) -> float:
        from iotop_plus.sampling.clock import MAX_INTERVAL, MIN_INTERVAL

        try:
            value = positive_float(text)
        except argparse.ArgumentTypeError as exc:
            self.error(f"argument --interval/-i: {exc}")
        if not MIN_INTERVAL <= value <= MAX_INTERVAL:
            self.error(
                f"argument --interval/-i: the TUI refreshes every {MIN_INTERVAL:g} to "
                f"{MAX_INTERVAL:g} seconds: {text!r}"
            )
        return value


def build_parser(argv: Sequence[str] | None = None) -> _Parser:
    """The argument parser: with ``argv``, only the subcommand it names is imported.

    The other subcommands are placeholders carrying their help line (enough for ``--help``);
    without ``argv`` every subcommand's real parser is built.
    """
    parser = _Parser(
        prog="iotop-plus",
        description="Live Linux storage: iostat -x figures, the processes doing the I/O, "
        "queue tuning and fio probes. Without a subcommand, starts the TUI.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--proc-root",
        metavar="DIR",
        help="read procfs from DIR instead of /proc (env IOTOP_PLUS_PROC)",
    )
    parser.add_argument(
        "--sys-root", metavar="DIR", help="read sysfs from DIR instead of /sys (env IOTOP_PLUS_SYS)"
    )
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        help="the settings journal and run locks live in DIR (default /var/lib/iotop-plus as "
        "root, else $XDG_STATE_HOME/iotop-plus)",
    )
    parser.add_argument(
        "--interval",
        "-i",
        dest="global_interval",
        metavar="S",
        help="TUI refresh interval in seconds (0.25 to 10; default: the config file's, else 1); "
        "before snapshot, top, record, serve or replay it is that subcommand's --interval",
    )
    parser.add_argument(
        "--all",
        "-a",
        action="store_true",
        dest="tui_all",
        help="TUI: start with every device shown (partitions, loop/ram/zram, never used)",
    )
    parser.add_argument(
        "--read-only",
        action="store_true",
        help="TUI: change nothing (no tuning, probes or experiments); config: read_only = true",
    )
    parser.add_argument(
        "--revert-on-exit",
        action="store_true",
        help="TUI: undo every setting changed in this run when quitting, without asking",
    )
    parser.epilog = (
        "Without a subcommand: iotop-plus [--all] [--interval S] [--read-only] [DEV...] starts "
        "the TUI; "
        "DEV (kernel name, dm name or /dev path) shows only those devices, the first selected."
    )
    parser.set_defaults(fleet_tui=_run_fleet_tui, replay_tui=_run_replay_tui)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    wanted = set(COMMANDS) if argv is None else {command_word(argv)}
    for name, help_line in COMMANDS.items():
        if name in wanted:
            command_module(name).add_parser(sub)
        else:
            sub.add_parser(name, help=help_line)
    parser.commands = tuple(sub.choices)
    parser.intervals = {}
    for name, subparser in sub.choices.items():
        for action in subparser._actions:
            if "--interval" in action.option_strings:
                # "Not given" while parsing, so a top-level --interval can take its place.
                parser.intervals[name] = (action, action.default)
                action.default = _NOT_GIVEN
    return parser


#: Top-level options that take a value (so the word after them is not a device or command).
_VALUED = ("--proc-root", "--sys-root", "--state-dir", "--interval", "-i")


def split_devices(argv: Sequence[str], commands: Iterable[str]) -> tuple[list[str], list[str]]:
    """Split the TUI's ``DEV...`` words from the options: (argv for argparse, devices).

    A bare word after the top-level options is a subcommand if it names one (then nothing is
    split off) and a device otherwise; words after ``--`` are devices.
    """
    names = set(commands)
    rest: list[str] = []
    devices: list[str] = []
    words = iter(argv)
    for word in words:
        if word == "--":
            devices.extend(words)
            break
        if word.startswith("-"):
            rest.append(word)
            if word in _VALUED:
                rest.extend(itertools.islice(words, 1))
            continue
        if not devices and word in names:
            return list(argv), []  # a subcommand: argparse takes it from here
        devices.append(word)
    return rest, devices


def command_word(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names (the first bare word after the top-level options), if any."""
    words = iter(argv)
    for word in words:
        if word == "--":
            return None
        if word.startswith("-"):
            if word in _VALUED:
                next(words, None)
            continue
        return word if word in COMMANDS else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``iotop-plus`` console script."""
    given = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(given)
    argv, devices = split_devices(given, parser.commands)
    args = parser.parse_args(argv)
    if args.command is not None and not hasattr(args, "run"):
        # argparse found a different subcommand than command_word did: parse with them all.
        parser = build_parser()
        args = parser.parse_args(argv)
    # Imported once parsed: --version and --help load no sampling code.
    from iotop_plus.roots import Roots
    from iotop_plus.sampling.disks.sampler import SourceError
    from iotop_plus.text import printable

    args.tui_devices = devices
    args.command_names = tuple(parser.commands)
    stdout = sys.stdout
    try:
        roots = Roots.resolve(args.proc_root, args.sys_root)
        for root, flag in ((roots.proc, "--proc-root"), (roots.sys, "--sys-root")):
            if not root.is_dir():
                print(f"iotop-plus: error: {flag} {root}: not a directory", file=sys.stderr)
                return EXIT_USAGE
        if args.command is None:
            return _run_tui(args, roots)
        # Output errors surface here, inside the try, not at interpreter exit as a traceback.
        sys.stdout = CheckedOutput(stdout)
        code = int(args.run(args, roots))
        sys.stdout.flush()
        return code
    except UsageError as exc:
        print(f"iotop-plus: error: {printable(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `iotop-plus snapshot | head`: the reader left; that is not an error.
        _discard_stdout()
        return EXIT_OK
    except OutputError as exc:
        _discard_stdout()
        print(f"iotop-plus: error: cannot write output: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except SourceError as exc:
        print(f"iotop-plus: error: {printable(str(exc))}", file=sys.stderr)
        return EXIT_FAILURE
    except OSError as exc:
        if exc.errno != errno.ENAMETOOLONG:
            raise
        # A 100,000-character root or device name: say so without echoing all of it.
        name = str(exc.filename or "")
        shown = name if len(name) <= 80 else f"{name[:60]}...({len(name):,} characters)"
        print(f"iotop-plus: error: {printable(shown)}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        sys.stdout = stdout


def _discard_stdout() -> None:
    """Point fd 1 at /dev/null, so the interpreter's own flush at exit has nowhere to fail
    (it would print "Exception ignored" and exit 120)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno() if sys.__stdout__ else 1)
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _run_tui(args: argparse.Namespace, roots: Roots) -> int:
    from iotop_plus.sampling.gcpause import gc_paused

    # The collector is held off through the start: its imports and first screen make little
    # garbage, and ~110 collections scanned their objects, ~50 ms before the first figures.
    # The screen turns it on once it is up (tui/engine/gc_policy.py, settle), or the end of
    # the run does.
    with gc_paused():
        return _start_tui(args, roots)


def _start_tui(args: argparse.Namespace, roots: Roots) -> int:
    # The first frame is read while Textual loads (~0.3-0.5 s of imports), so the first
    # screen already has figures over that time.
    from iotop_plus.sampling.clock import FIRST_INTERVAL_S
    from iotop_plus.sampling.frame.sources import tui_source
    from iotop_plus.state import chosen_state_dir

    source = tui_source(roots, chosen_state_dir(getattr(args, "state_dir", None)))
    if args.tui_devices:
        # Named devices are checked before the screen starts: a typo is a usage error.
        from iotop_plus.commands.named_devices import resolve_devices

        first = source.next_frame()
        for word in args.tui_devices:
            try:
                resolve_devices([word], first.sample, first.inventory)
            except UsageError:
                # `iotop-plus snapshto`: a mistyped subcommand, not a device to look for.
                close = difflib.get_close_matches(word, getattr(args, "command_names", ()), 1)
                if close:
                    shown = word if len(word) <= 80 else f"{word[:60]}..."
                    raise UsageError(
                        f"unknown device or command {shown!r} (did you mean {close[0]!r}?)"
                    ) from None
                raise
        args.tui_devices = resolve_devices(args.tui_devices, first.sample, first.inventory)
        # The next frame, with rates, is read while Textual loads: a short interval after this
        # one, as the sampler's second frame would be (not at once: rates over a few
        # milliseconds would be noise).
        source.prime(not_before=first.monotonic + FIRST_INTERVAL_S)
    else:
        source.prime()
    try:
        from iotop_plus.tui.run import run_tui
    except ImportError as exc:
        print(
            f"iotop-plus: the TUI is not available ({exc}); try `iotop-plus snapshot`",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    return run_tui(args, roots, source=source)


def _run_replay_tui(args: argparse.Namespace, roots: Roots, timeline: object, at: object) -> int:
    """``replay``'s TUI, loaded only when asked for (commands never import Textual)."""
    try:
        from iotop_plus.tui.replay import run_replay
    except ImportError as exc:
        print(
            f"iotop-plus: the TUI is not available ({exc}); try `snapshot --from`",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    return run_replay(args, roots, timeline, at)  # type: ignore[arg-type]


def _run_fleet_tui(client: object, refresh_s: float, window: str) -> int:
    """``fleet``'s TUI, loaded only when asked for (commands never import Textual)."""
    try:
        from iotop_plus.tui.fleet.app import FleetApp
    except ImportError as exc:
        print(f"iotop-plus: the TUI is not available ({exc}); try --once", file=sys.stderr)
        return EXIT_FAILURE
    app = FleetApp(client, refresh_s=refresh_s, window=window)  # type: ignore[arg-type]
    app.run()
    return EXIT_FAILURE if app.return_code else EXIT_OK  # a crash is 1, never 0
