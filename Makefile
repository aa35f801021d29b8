# Two commands from a fresh clone: `make run` and `make test`. Each does its own set-up.
# `make test-fast` is the inner loop: unit and Pilot tests only (no root, no slow), on four
# workers, under a minute.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-fast lint typecheck pytest screenshots bench bench-peers clean sysdeps bytecode

# Set-up time (pip, apt) is printed apart from the tests' own time.
$(STAMP): pyproject.toml
	@start=$$(date +%s); \
	$(PYTHON) -m venv $(VENV) && \
	$(BIN)/pip install --quiet --upgrade pip && \
	$(BIN)/pip install --quiet -e '.[test]' && \
	touch $(STAMP) && \
	echo "set-up: pip install took $$(( $$(date +%s) - start )) s"

# fio (probes), sysstat (iostat, for the parity tests), tmux (end-to-end tests), bpftrace
# (latency tracer), prometheus (promtool and the server, for the exporter tests) and udev
# (udevadm, to check the exported udev rules; udevd itself is never started), strace and
# postgresql-15 (pg_test_fsync, for the durability probe's syscall comparison), xfsprogs (the
# sync part's XFS test):
# installed only when missing and we are root; otherwise the tests that need them say so.
sysdeps:
	@start=$$(date +%s); missing=""; \
	for pair in fio:fio iostat:sysstat tmux:tmux udevadm:udev bpftrace:bpftrace promtool:prometheus smartctl:smartmontools strace:strace mkfs.xfs:xfsprogs \
		/usr/lib/postgresql/15/bin/pg_test_fsync:postgresql-15; do \
		cmd=$${pair%%:*}; pkg=$${pair##*:}; \
		command -v $$cmd >/dev/null 2>&1 || missing="$$missing $$pkg"; \
	done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing:$$missing"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
			echo "set-up: apt-get install took $$(( $$(date +%s) - start )) s"; \
		else \
			echo "note: missing$$missing (not root or no apt-get); tests that need them will skip with a reason"; \
		fi; \
	fi

# The editable install leaves no .pyc files and PYTHONDONTWRITEBYTECODE (set on some hosts)
# stops Python writing them: compiling our modules on every start cost ~150 ms of the first
# frame. compileall skips modules that are up to date.
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q iotop_plus

run: $(STAMP) sysdeps bytecode
	$(BIN)/iotop-plus

lint: $(STAMP)
	$(BIN)/ruff check iotop_plus tests benchmarks scripts
	$(BIN)/ruff format --check iotop_plus tests benchmarks scripts
	$(BIN)/lint-imports --no-cache --no-logo

# mypy over iotop_plus and tests ([tool.mypy] in pyproject.toml).
typecheck: $(STAMP)
	$(BIN)/mypy

# Two phases. Tests that share nothing host-wide run on $(WORKERS) workers (0: in one process);
# the `serial` ones (tests/conftest.py SERIAL: a sysctl, the set of running tracers, a timing,
# a loop device node removed) then run alone. Both phases run, and either failing fails the target. On four workers the
# suite takes about 6 minutes on the 2-core machine, in one process about 13: most tests wait
# on a child, a device or a frame, so four workers keep both cores busy.
WORKERS ?= 4
pytest: $(STAMP) sysdeps
	@status=0; \
	$(BIN)/pytest -q -n $(WORKERS) --dist worksteal -m "not serial" --durations=10 || status=1; \
	$(BIN)/pytest -q -m serial --durations=10 || status=1; \
	exit $$status

test: lint typecheck pytest

# No lint, no mypy, no root, no slow: what the unit and Pilot tests say, on four workers (two
# left the cores a third idle while Pilot tests waited for their app to settle: 61 s against
# 53 s) with worksteal (an idle worker takes tests from a busy one, so a long test does not
# end alone).
# The hypothesis profile `fast` (tests/conftest.py) runs a fifth of the property examples and
# seeded fuzz cases (tests/support/budget.py), from a fixed seed; `make test` runs them all.
# Both profiles are the suite's one profile: no deadline and no too_slow health check.
# scripts/busy_host.sh loads the host as a shared runner does, to try either beside it.
test-fast: $(STAMP)
	$(BIN)/pytest -q -n 4 --dist worksteal --timeout=60 --hypothesis-profile fast \
		-m "not slow and not root" tests/unit tests/tui

# PNG copies need rsvg-convert (librsvg2-bin); without it the script writes SVG only.
screenshots: $(STAMP)
	@command -v rsvg-convert >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing: librsvg2-bin"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq librsvg2-bin >/dev/null; \
		else \
			echo "note: rsvg-convert missing (librsvg2-bin): SVG screenshots only"; \
		fi; }
	$(BIN)/python scripts/screenshots.py

bench: $(STAMP) sysdeps bytecode
	$(BIN)/python benchmarks/bench_sampling.py

# The peers the benchmarks compare against (#25): btop and atop from apt, bpytop in a
# throwaway venv outside the repo ($(PEERS), what benchmarks/ read through
# IOTOP_PLUS_BENCH_PEERS). A peer that cannot be installed is named, never skipped silently;
# then the light benchmarks run (the TUI's CPU beside btop's, the start-up times).
PEERS ?= /opt/iotop-peers
bench-peers: $(STAMP) sysdeps bytecode
	@missing=""; apt=""; \
	for pair in btop:btop atop:atop; do \
		command -v $${pair%%:*} >/dev/null 2>&1 || apt="$$apt $${pair##*:}"; \
	done; \
	if [ -n "$$apt" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing:$$apt"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$apt >/dev/null \
				|| echo "note: apt-get install$$apt failed"; \
		else \
			echo "note: not root or no apt-get: cannot install$$apt"; \
		fi; \
	fi; \
	[ -x $(PEERS)/bin/bpytop ] || { $(PYTHON) -m venv $(PEERS) && $(PEERS)/bin/pip install --quiet bpytop; } \
		|| echo "note: pip install bpytop into $(PEERS) failed"; \
	for cmd in btop atop iostat $(PEERS)/bin/bpytop; do \
		command -v $$cmd >/dev/null 2>&1 || missing="$$missing $$(basename $$cmd)"; \
	done; \
	if [ -n "$$missing" ]; then echo "MISSING PEERS:$$missing (their rows will say so)"; \
	else echo "peers: btop, atop, bpytop ($(PEERS)), iostat"; fi
	IOTOP_PLUS_BENCH_PEERS=$(PEERS) $(BIN)/python benchmarks/bench_startup.py
	IOTOP_PLUS_BENCH_PEERS=$(PEERS) $(BIN)/python benchmarks/bench_light.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
