"""fio as a child of a thread that lives exactly as long as it does (``PR_SET_PDEATHSIG``)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import subprocess
import threading
from collections.abc import Callable

from iotop_plus.programs import popen_held, release_group


class FioProcess:
    """fio, started and reaped by its own thread, which lives exactly as long as fio.

    ``PR_SET_PDEATHSIG`` (set by setpriv) fires when the thread that forked the child exits;
    a pool worker or an event loop's thread may end before fio does.
    """

    def __init__(self, argv: list[str], pass_fds: tuple[int, ...]) -> None:
        self.argv = argv
        self.pass_fds = pass_fds
        self.popen: subprocess.Popen[bytes] | None = None
        self.stdout = asyncio.StreamReader()
        self.stderr = asyncio.StreamReader()
        self._loop = asyncio.get_running_loop()
        self._started: asyncio.Future[None] = self._loop.create_future()
        self._done: asyncio.Future[int] = self._loop.create_future()
        self._lock = threading.Lock()
        self._exited = False
        self._transports: list[asyncio.BaseTransport] = []

    async def start(self) -> None:
        threading.Thread(target=self._thread, name="fio", daemon=True).start()
        await self._started
        assert self.popen is not None and self.popen.stdout and self.popen.stderr
        for pipe, reader in ((self.popen.stdout, self.stdout), (self.popen.stderr, self.stderr)):
            transport, _ = await self._loop.connect_read_pipe(
                functools.partial(asyncio.StreamReaderProtocol, reader), pipe
            )
            self._transports.append(transport)

    def _thread(self) -> None:
        try:
            self.popen = popen_held(  # killed with iotop-plus, even if nothing cancels the probe
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=self.pass_fds,
            )
        except OSError as exc:
            self._post(self._started.set_exception, exc)
            return
        pid = self.popen.pid
        self._post(self._started.set_result, None)
        with contextlib.suppress(ChildProcessError):
            # Wait without reaping: until we mark it exited, its pid cannot be reused, so
            # kill() never hits another process.
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        with self._lock:
            self._exited = True
        release_group(pid)
        code = self.popen.wait()
        self._post(self._done.set_result, code)

    def _post(self, setter: Callable[..., object], value: object) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            self._loop.call_soon_threadsafe(_settle, setter, value)

    def kill(self) -> None:
        """SIGKILL fio's process group (its jobs are threads) unless fio has exited."""
        with self._lock:
            if self.popen is None or self._exited:
                return
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.popen.pid, signal.SIGKILL)

    async def wait(self) -> int:
        """fio's exit status (negative: killed by that signal)."""
        return await asyncio.shield(self._done)

    def close_pipes(self) -> None:
        for transport in self._transports:
            transport.close()


def _settle(setter: Callable[..., object], value: object) -> None:
    with contextlib.suppress(asyncio.InvalidStateError):
        setter(value)
