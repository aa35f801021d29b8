#!/usr/bin/env bash
# Load this host the way a shared CI runner does, to try the test suite beside it:
# two CPU-bound loops, and a churner that attaches a loop device on a file of its own, detaches
# it and removes its node (LOOP_CTL_REMOVE), over and over (up to 10 a second). Each removal
# opens the window where another process's "free loop number" vanishes before it binds it.
# Runs until SECONDS have passed (default: until Ctrl-C or SIGTERM); on the way out it stops
# the loops and detaches and removes the devices it made, never anyone else's.
set -euo pipefail

usage="usage: scripts/busy_host.sh [SECONDS]   (as root; Ctrl-C or SIGTERM stops it)"
case "${1:-}" in
-h | --help)
	echo "$usage"
	exit 0
	;;
"") seconds=0 ;;
*[!0-9]*)
	echo "$usage" >&2
	exit 2
	;;
*) seconds=$1 ;;
esac
if [ "$(id -u)" != 0 ]; then
	echo "busy_host.sh: needs root (it attaches and removes loop devices)" >&2
	exit 1
fi
for cmd in losetup python3; do
	command -v "$cmd" >/dev/null || {
		echo "busy_host.sh: $cmd is not installed" >&2
		exit 1
	}
done

work=$(mktemp -d /tmp/busy-host.XXXXXX)
pids=()
sleeper=""
stop() {
	trap - INT TERM EXIT
	# The churner cleans up on SIGTERM (its own device detached and removed, its file gone).
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	[ -z "$sleeper" ] || kill "$sleeper" 2>/dev/null || true
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	rm -rf "$work"
	echo "busy_host.sh: stopped; load average $(cut -d' ' -f1-3 /proc/loadavg)"
}
trap 'stop; exit 0' INT TERM
trap stop EXIT

for _ in 1 2; do
	# A CPU-bound loop that ends with its parent (and on SIGTERM).
	bash -c 'trap "exit 0" TERM; while :; do :; done' &
	pids+=($!)
done

python3 - "$work" <<'EOF' &
"""The churner: attach a loop device on our own file, detach it, remove its node; repeat."""
import errno
import fcntl
import os
import signal
import subprocess
import sys
import time

LOOP_CTL_REMOVE = 0x4C81
PERIOD_S = 0.1  # ten cycles a second when the host lets it; as many as it can when it does not
work = sys.argv[1]
backing = os.path.join(work, "churn.img")
with open(backing, "xb") as fh:
    fh.truncate(1024 * 1024)
stopping = False


def stop(signum, frame):
    global stopping
    stopping = True


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
control = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
cycles = failed = 0
started = last = time.monotonic()
while not stopping:
    now_started = time.monotonic()
    done = subprocess.run(
        ["losetup", "--find", "--show", backing], capture_output=True, text=True
    )
    if done.returncode != 0:  # our free number was removed or taken meanwhile: again
        failed += 1
        time.sleep(PERIOD_S)
        continue
    dev = done.stdout.strip()
    subprocess.run(["losetup", "-d", dev], capture_output=True)
    number = int(dev.removeprefix("/dev/loop"))
    for _ in range(20):  # EBUSY while udev (or someone's losetup --find) has it open
        try:
            fcntl.ioctl(control, LOOP_CTL_REMOVE, number)
            break
        except OSError as exc:
            if exc.errno != errno.EBUSY or stopping:
                break
            time.sleep(0.005)
    cycles += 1
    now = time.monotonic()
    if now - last >= 30:
        print(
            f"busy_host.sh: churner {cycles / (now - started):.1f} cycles/s "
            f"({failed} attaches retried); load average {open('/proc/loadavg').read()[:14]}",
            flush=True,
        )
        last = now
    time.sleep(max(0.0, PERIOD_S - (time.monotonic() - now_started)))
os.close(control)
now = time.monotonic()
print(f"busy_host.sh: churner did {cycles} cycles, {cycles / (now - started):.1f}/s", flush=True)
EOF
pids+=($!)

echo "busy_host.sh: 2 CPU loops and a loop-device churner running (pids ${pids[*]}; files in $work)"
if [ "$seconds" -gt 0 ]; then
	sleep "$seconds" &
	sleeper=$!
	wait "$sleeper" || true
else
	while :; do
		sleep 3600 &
		sleeper=$!
		wait "$sleeper" || true
	done
fi
