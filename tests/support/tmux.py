"""Drive a terminal program in a detached tmux session, as a person at a terminal would.

Each :class:`TmuxSession` runs its own tmux server (a private socket in a temp dir, no user
config), so it never touches anyone's tmux. The pane runs a plain ``bash`` with a known
prompt; a command is typed into that shell, so that after the program exits the shell is
still there to prove the terminal was handed back in a usable state.

How "the terminal was restored" is judged (:meth:`TmuxSession.terminal_state` and
:meth:`TmuxSession.assert_restored`):

- tmux's own view of the pane's modes (``alternate_on``, ``cursor_flag``, the mouse and
  keypad flags...) must equal a baseline taken at the shell prompt before the program started;
- ``stty -g`` (echo, canonical mode, signals) must equal its value before the program started,
  and ``stty size`` must match the pane;
- the shell must answer: ``echo MARK-$((N*7))`` must print ``MARK-<product>``, which only the
  shell's arithmetic produces (the typed line shows ``$((...))``, never the result);
- the main screen must hold what it held before: the line that launched the program is still
  visible (an app that drew on the main screen, not the alternate one, wipes it);
- no Python traceback on screen.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

#: The pane flags tmux tracks that a full-screen program may change and must put back.
PANE_FLAGS = (
    "alternate_on",
    "cursor_flag",
    "insert_flag",
    "keypad_cursor_flag",
    "keypad_flag",
    "mouse_all_flag",
    "mouse_any_flag",
    "mouse_button_flag",
    "mouse_sgr_flag",
    "mouse_standard_flag",
    "mouse_utf8_flag",
    "origin_flag",
    "wrap_flag",
    "pane_in_mode",
)

PROMPT = "tmuxh$ "


class TmuxError(AssertionError):
    """A wait ran out or the terminal was not restored; the message holds the screen."""


def tmux_available() -> str | None:
    """None when tmux can be used here, else the reason why not."""
    if shutil.which("tmux") is None:
        return "tmux is not installed"
    if shutil.which("bash") is None:
        return "bash is not installed"
    return None


@dataclass(frozen=True)
class TerminalState:
    """What the pane's terminal looks like at one moment, for before/after comparisons."""

    flags: Mapping[str, str]
    """tmux's pane mode flags (see :data:`PANE_FLAGS`), name -> "0"/"1"."""
    stty: str
    """``stty -g`` of the pane's tty, as the shell sees it."""
    size: tuple[int, int]
    """(rows, columns) from ``stty size``."""


@dataclass(frozen=True)
class Launched:
    """A command started in the pane's shell."""

    command: str
    """The command line as typed."""
    rc_file: Path
    """Where the shell writes the command's exit status when it ends."""


class TmuxSession:
    """A detached tmux session of a given size with a bash prompt in its only pane."""

    def __init__(
        self,
        width: int = 120,
        height: int = 36,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        reason = tmux_available()
        if reason:
            raise RuntimeError(reason)
        self.width, self.height = width, height
        self.workdir = Path(tempfile.mkdtemp(prefix="tmuxh-"))
        self.socket = self.workdir / "sock"
        self.name = "h" + uuid.uuid4().hex[:8]
        self._baseline: TerminalState | None = None
        self._launch_count = 0
        conf = self.workdir / "tmux.conf"
        term = "tmux-256color" if _has_terminfo("tmux-256color") else "screen-256color"
        conf.write_text(
            f'set -g default-terminal "{term}"\n'
            "set -g history-limit 2000\n"
            "set -g status off\n"
            "set -s escape-time 0\n"
            "set -g remain-on-exit off\n"
        )
        shell_env = {
            "PS1": PROMPT,
            "HISTFILE": "/dev/null",
            "LANG": os.environ.get("LANG", "C.UTF-8") or "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "COLORTERM": "truecolor",
        }
        shell_env.update(env or {})
        argv = [
            "tmux",
            "-S",
            str(self.socket),
            "-f",
            str(conf),
            "new-session",
            "-d",
            "-s",
            self.name,
            "-x",
            str(width),
            "-y",
            str(height),
        ]
        if cwd is not None:
            argv += ["-c", str(cwd)]
        for key, value in shell_env.items():
            argv += ["-e", f"{key}={value}"]
        argv += ["bash", "--norc", "--noprofile", "-i"]
        subprocess.run(argv, check=True, capture_output=True, text=True)
        self.wait_for(PROMPT.rstrip(), timeout=10)

    # -- low level -----------------------------------------------------------------------

    def tmux(self, *args: str, check: bool = True) -> str:
        """Run a tmux command against this session's server; returns its stdout."""
        done = subprocess.run(
            ["tmux", "-S", str(self.socket), *args], capture_output=True, text=True
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args)} failed: {done.stderr.strip()}")
        return done.stdout

    def capture(self, escapes: bool = False) -> str:
        """The visible pane as text (with SGR colour escapes when ``escapes``)."""
        args = ["capture-pane", "-p", "-t", self.name]
        if escapes:
            args.append("-e")
        return self.tmux(*args)

    def lines(self) -> list[str]:
        """The visible pane, one string per row."""
        return self.capture().split("\n")[: self.height]

    def send_keys(self, *keys: str) -> None:
        """Send tmux key names (``Enter``, ``Space``, ``C-c``, ``Down``) or literal strings."""
        self.tmux("send-keys", "-t", self.name, *keys)

    def send_text(self, text: str) -> None:
        """Type ``text`` literally (no key-name lookup)."""
        self.tmux("send-keys", "-t", self.name, "-l", text)

    def pane_value(self, fmt: str) -> str:
        """One tmux format evaluated for the pane, e.g. ``#{pane_pid}``."""
        return self.tmux("display-message", "-p", "-t", self.name, fmt).strip()

    @property
    def shell_pid(self) -> int:
        """PID of the bash in the pane."""
        return int(self.pane_value("#{pane_pid}"))

    # -- waiting ---------------------------------------------------------------------------

    def wait_until(
        self,
        predicate: Callable[[str], bool],
        timeout: float = 10.0,
        interval: float = 0.05,
        what: str = "condition",
    ) -> str:
        """Poll the screen until ``predicate(screen)`` holds; returns that screen.

        Raises :class:`TmuxError` with the last screen when ``timeout`` runs out.
        """
        deadline = time.monotonic() + timeout
        screen = self.capture()
        while not predicate(screen):
            if time.monotonic() > deadline:
                raise TmuxError(f"timed out after {timeout}s waiting for {what}:\n{screen}")
            time.sleep(interval)
            screen = self.capture()
        return screen

    def wait_for(self, text: str | re.Pattern[str], timeout: float = 10.0) -> str:
        """Wait until ``text`` (a substring or a compiled regex) is on screen."""
        if isinstance(text, re.Pattern):
            pattern = text
            return self.wait_until(
                lambda s: pattern.search(s) is not None, timeout, what=repr(pattern.pattern)
            )
        return self.wait_until(lambda s: text in s, timeout, what=repr(text))

    def wait_gone(self, text: str, timeout: float = 10.0) -> str:
        """Wait until ``text`` is no longer on screen."""
        return self.wait_until(lambda s: text not in s, timeout, what=f"{text!r} to go")

    # -- running a program -----------------------------------------------------------------

    def terminal_state(self) -> TerminalState:
        """The pane's modes, tty settings and size, read while the shell is at its prompt."""
        flags_fmt = "\t".join(f"#{{{f}}}" for f in PANE_FLAGS)
        values = self.pane_value(flags_fmt).split("\t")
        flags = dict(zip(PANE_FLAGS, values, strict=True))
        out = self.workdir / f"stty-{uuid.uuid4().hex[:6]}"
        # The redirection runs in the shell, so stty reads the pane's own tty.
        self._run_quietly(f"{{ stty -g; stty size; }} > {out} 2>&1")
        stty, size = out.read_text().split("\n")[:2]
        rows, cols = (int(x) for x in size.split())
        return TerminalState(flags=flags, stty=stty.strip(), size=(rows, cols))

    def _run_quietly(self, command: str, timeout: float = 10.0) -> None:
        """Run a shell command at the prompt and wait for it to finish."""
        done = self.workdir / f"done-{uuid.uuid4().hex[:6]}"
        self.send_text(f"{command}; : > {done}")
        self.send_keys("Enter")
        deadline = time.monotonic() + timeout
        while not done.exists():
            if time.monotonic() > deadline:
                raise TmuxError(f"shell did not run {command!r}:\n{self.capture()}")
            time.sleep(0.02)

    def launch(self, argv: list[str], env: Mapping[str, str] | None = None) -> Launched:
        """Type ``argv`` at the prompt and start it; records the baseline terminal state first.

        The shell writes the exit status to a file when the program ends, so
        :meth:`wait_exit` sees it without parsing the screen.
        """
        self._baseline = self.terminal_state()
        self.send_keys("C-l")  # start from a clean screen so the launch line is easy to find
        self.wait_until(lambda s: s.strip() == PROMPT.strip(), timeout=5, what="clear screen")
        self._launch_count += 1
        rc_file = self.workdir / f"rc-{self._launch_count}"
        prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in (env or {}).items())
        command = " ".join(shlex.quote(a) for a in argv)
        line = f"{prefix + ' ' if prefix else ''}{command}; echo $? > {rc_file}"
        self.send_text(line)
        self.send_keys("Enter")
        return Launched(command=line, rc_file=rc_file)

    def program_pid(self, launched: Launched, timeout: float = 10.0) -> int:
        """PID of the launched program: the shell's child that is not a helper."""
        deadline = time.monotonic() + timeout
        shell = self.shell_pid
        while time.monotonic() < deadline:
            kids = _children(shell)
            if kids:
                return kids[0]
            if launched.rc_file.exists():
                raise TmuxError(f"program already exited:\n{self.capture()}")
            time.sleep(0.01)
        raise TmuxError(f"no child process of the shell appeared:\n{self.capture()}")

    def wait_exit(self, launched: Launched, timeout: float = 10.0) -> int:
        """Wait for the launched program to end; returns its exit status as the shell saw it."""
        deadline = time.monotonic() + timeout
        while not launched.rc_file.exists() or not launched.rc_file.read_text().strip():
            if time.monotonic() > deadline:
                raise TmuxError(f"program still running after {timeout}s:\n{self.capture()}")
            time.sleep(0.05)
        return int(launched.rc_file.read_text().strip())

    def assert_restored(self, launched: Launched) -> None:
        """Check the terminal was handed back sane after ``launched`` ended (see module doc).

        Raises :class:`TmuxError` naming every problem found, with the screen.
        """
        if self._baseline is None:
            raise RuntimeError("launch() was not called")
        problems: list[str] = []
        screen = self.capture()
        # The launch line (typed on the main screen) must still be there.
        if launched.command[:40] not in screen.replace("\n", ""):
            problems.append("the line that launched the program is gone from the main screen")
        if "Traceback (most recent call last)" in screen:
            problems.append("a Python traceback is on screen")
        n = int(time.monotonic_ns() % 9000) + 1000
        self.send_text(f"echo MARK-$(({n}*7))")
        self.send_keys("Enter")
        mark = f"MARK-{n * 7}"

        def prompt_after_mark(screen: str) -> bool:
            rows = screen.split("\n")
            marker_rows = [i for i, row in enumerate(rows) if mark in row]
            prompt_rows = [i for i, row in enumerate(rows) if row.startswith(PROMPT.strip())]
            return bool(marker_rows and prompt_rows) and max(prompt_rows) > marker_rows[-1]

        try:
            self.wait_for(mark, timeout=5)
        except TmuxError:
            problems.append("the shell did not answer an echo (input or output broken)")
        else:
            try:  # the shell prints its prompt a moment after the echo's output
                self.wait_until(prompt_after_mark, timeout=5, what="a prompt after the echo")
            except TmuxError:
                problems.append("no fresh prompt after the echo")
        try:
            after = self.terminal_state()
        except TmuxError as exc:
            problems.append(f"could not read terminal state: {exc}")
        else:
            before = self._baseline
            for flag in PANE_FLAGS:
                if after.flags[flag] != before.flags[flag]:
                    problems.append(f"{flag} is {after.flags[flag]}, was {before.flags[flag]}")
            if after.stty != before.stty:
                problems.append(f"stty settings changed: {before.stty!r} -> {after.stty!r}")
            if after.size != (self.height, self.width):
                problems.append(f"stty size is {after.size}, pane is {(self.height, self.width)}")
        if problems:
            raise TmuxError("terminal not restored: " + "; ".join(problems) + "\n" + self.capture())

    def kill(self) -> None:
        """End the tmux server of this session (and everything in it); remove the temp dir."""
        self.tmux("kill-server", check=False)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> TmuxSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` (from /proc/PID/task/*/children), oldest first."""
    kids: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            continue
    return sorted(kids)


def _has_terminfo(name: str) -> bool:
    return (
        subprocess.run(["infocmp", name], capture_output=True).returncode == 0
        if shutil.which("infocmp")
        else False
    )


def descendants(pid: int) -> list[int]:
    """All descendants of ``pid``, for summing CPU of a program and its children."""
    out: list[int] = []
    todo = [pid]
    while todo:
        kids = _children(todo.pop())
        out += kids
        todo += kids
    return out
