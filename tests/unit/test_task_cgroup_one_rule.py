"""The Processes tab's CGROUP column and the issuers name a task's cgroup by one rule
(REFERENCE.md, "Who and why"): the v2 path when the task sits below the v2 root, else its v1
blkio path. On a hybrid host the column showed the blkio path even for a task in a v2 child."""

from __future__ import annotations

from pathlib import Path

from iotop_plus.roots import Roots
from iotop_plus.sampling.cgroups.names import task_cgroup
from iotop_plus.sampling.processes.issuers import cgroup_of
from iotop_plus.sampling.processes.task_cgroups import TaskCgroups
from tests.support.cgroup_trees import hybrid_tree

IN_V2_CHILD = "9:name=systemd:/\n7:blkio:/system.slice/cron.service\n0::/batch.slice/job.scope\n"
IN_V2_ROOT = "9:name=systemd:/\n7:blkio:/system.slice/ssh.service\n0::/\n"
V1_ONLY = "7:cpu,blkio:/legacy/db\n"
V2_ONLY_ROOT = "0::/\n"


def _hybrid_host(base: Path) -> Roots:
    hybrid_tree(base)
    for pid, text in ((101, IN_V2_CHILD), (102, IN_V2_ROOT), (103, V1_ONLY)):
        (base / "proc" / str(pid)).mkdir(parents=True)
        (base / "proc" / str(pid) / "cgroup").write_text(text)
    return Roots(base / "proc", base / "sys")


def test_the_cgroup_column_follows_the_issuers_rule_on_a_hybrid_host(tmp_path: Path) -> None:
    roots = _hybrid_host(tmp_path)
    paths = TaskCgroups(roots).update({(101, 1): None, (102, 2): None, (103, 3): None})
    # A task moved into a v2 child is named by its v2 path (the issuers' cgroup), not blkio's.
    assert paths[(101, 1)] == "/batch.slice/job.scope"
    # A task in the v2 root is charged and limited in v1: its blkio path.
    assert paths[(102, 2)] == "/system.slice/ssh.service"
    assert paths[(103, 3)] == "/legacy/db"
    for pid, key in ((101, (101, 1)), (102, (102, 2)), (103, (103, 3))):
        text = (tmp_path / "proc" / str(pid) / "cgroup").read_text()
        assert cgroup_of(text)[0] == paths[key]


def test_one_function_gives_the_path_and_where_it_comes_from() -> None:
    assert task_cgroup(IN_V2_CHILD) == ("/batch.slice/job.scope", "v2")
    assert task_cgroup(IN_V2_ROOT) == ("/system.slice/ssh.service", "blkio")
    assert task_cgroup(V1_ONLY) == ("/legacy/db", "blkio")
    assert task_cgroup(V2_ONLY_ROOT) == ("/", "v2")
    assert task_cgroup("garbage\n") == (None, None)
    assert cgroup_of is not None and cgroup_of(IN_V2_CHILD) == task_cgroup(IN_V2_CHILD)
