"""Names for people from cgroup paths, and which cgroup a process is in.

Layouts recognised (the last component that says something wins):

* systemd units: ``/system.slice/nginx.service`` -> ``nginx.service`` (also ``.slice``,
  ``.scope``, ``.socket``, ``.mount``, ``.swap``);
* containers, by the runtime's prefix, ids shortened to 12 hex digits: docker
  (``docker-<id>.scope`` with the systemd driver, ``/docker/<id>`` with cgroupfs), containerd
  (``cri-containerd-<id>.scope``), CRI-O (``crio-<id>.scope``), podman (``libpod-<id>.scope``,
  ``/libpod_parent/libpod-<id>``);
* Kubernetes pods with their QoS class, with either cgroup driver: systemd
  (``kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_with_underscores>.slice``;
  guaranteed pods sit right under ``kubepods.slice``) or cgroupfs
  (``/kubepods/besteffort/pod<uid>``; guaranteed: ``/kubepods/pod<uid>``).
"""

from __future__ import annotations

import re

_HEX_ID = re.compile(r"[0-9a-f]{64}")
_RUNTIME_PREFIXES = (
    ("cri-containerd-", "containerd"),
    ("docker-", "docker"),
    ("crio-conmon-", "cri-o conmon"),
    ("crio-", "cri-o"),
    ("libpod-conmon-", "podman conmon"),
    ("libpod-", "podman"),
    ("containerd-", "containerd"),
)
_CGROUPFS_PARENTS = {"docker": "docker", "libpod_parent": "podman", "containerd": "containerd"}
_UNIT_SUFFIXES = (".service", ".slice", ".scope", ".socket", ".mount", ".swap")
_POD = re.compile(
    r"^(?:kubepods-(?:(burstable|besteffort)-)?)?pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}"
    r"[-_][0-9a-f]{4}[-_][0-9a-f]{12})(?:\.slice)?$"
)
QOS_CLASSES = ("guaranteed", "burstable", "besteffort")


def container_name(component: str, parent: str | None = None) -> str | None:
    """``docker 0123456789ab`` for a container's cgroup directory name; None if not one."""
    base = component.removesuffix(".scope")
    for prefix, runtime in _RUNTIME_PREFIXES:
        if base.startswith(prefix) and _HEX_ID.fullmatch(base[len(prefix) :]):
            return f"{runtime} {base[len(prefix) : len(prefix) + 12]}"
    if _HEX_ID.fullmatch(base):
        runtime = _CGROUPFS_PARENTS.get(parent or "", "container")
        return f"{runtime} {base[:12]}"
    return None


def pod_name(component: str, parents: list[str]) -> str | None:
    """``pod 1f2e...-... (burstable)`` for a pod's cgroup directory name; None if not one."""
    match = _POD.match(component)
    if match is None:
        return None
    uid = match.group(2).replace("_", "-")
    qos = match.group(1)
    if qos is None:  # cgroupfs: the class is the parent's name; guaranteed pods have none
        parent = parents[-1] if parents else ""
        qos = parent if parent in ("burstable", "besteffort") else "guaranteed"
    return f"pod {uid} ({qos})"


def cgroup_name(path: str) -> str:
    """A short name for people: the unit, the container (short id), or the pod and its QoS.

    A container inside a pod is named ``<runtime> <id> in pod <uid>``: ``pod`` alone would
    hide which of its containers does the I/O.
    """
    if path in ("", "/"):
        return "/"
    parts = [p for p in path.split("/") if p]
    pod: str | None = None
    for i, part in enumerate(parts):
        found = pod_name(part, parts[:i])
        if found is not None:
            pod = found
    last = parts[-1]
    container = container_name(last, parts[-2] if len(parts) > 1 else None)
    if container is not None:
        if pod is not None:
            return f"{container} in {pod.split(' (')[0]}"
        return container
    if pod is not None and pod_name(last, parts[:-1]) is not None:
        return pod
    if last.endswith(_UNIT_SUFFIXES):
        return last
    if last in QOS_CLASSES or last.startswith("kubepods"):
        return last.removesuffix(".slice")
    return last


def parse_proc_cgroup(text: str, v2: bool, controller: str = "blkio") -> str | None:
    """The cgroup path of ``/proc/PID/cgroup`` for one hierarchy.

    ``0::/path`` is v2; v1 lines are ``7:blkio:/path`` (controllers comma-separated).
    """
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if v2:
            if parts[0] == "0" and parts[1] == "":
                return parts[2].strip() or "/"
        elif controller in parts[1].split(","):
            return parts[2].strip() or "/"
    return None


def task_cgroup(text: str) -> tuple[str | None, str | None]:
    """``(path, source)`` of a task's ``/proc/PID/cgroup``, by the one rule every view uses.

    The v2 path when the task sits below the v2 root (``source`` ``v2``), else its v1
    ``blkio`` path (``blkio``: on a hybrid host every task not moved into a v2 child is in the
    v2 root, and v1 is where its I/O is charged and limited), else the v2 root itself;
    ``(None, None)`` when the text names neither hierarchy.
    """
    v2 = parse_proc_cgroup(text, True)
    if v2 is not None and v2 != "/":
        return v2, "v2"
    blkio = parse_proc_cgroup(text, False, "blkio")
    if blkio is not None:
        return blkio, "blkio"
    if v2 is not None:
        return v2, "v2"
    return None, None
