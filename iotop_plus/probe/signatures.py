"""What a device holds, read before a write probe may touch it: filesystem, volume and
partition-table signatures, from ``blkid -p`` and from the magic bytes themselves."""

from __future__ import annotations

import os

from iotop_plus.programs import EXITED, find_program, run_contained

# Magic bytes of common filesystems, volume formats and partition tables: (offset, bytes,
# what). Used besides ``blkid -p`` so a missing blkid never lets a write through.
_SIGNATURES: tuple[tuple[int, bytes, str], ...] = (
    (1080, b"\x53\xef", "an ext2/3/4 filesystem"),
    (0, b"XFSB", "an XFS filesystem"),
    (65600, b"_BHRfS_M", "a btrfs filesystem"),
    (4086, b"SWAPSPACE2", "a swap signature"),
    (0, b"LUKS\xba\xbe", "a LUKS volume"),
    (512, b"EFI PART", "a GPT partition table"),
    (510, b"\x55\xaa", "a DOS partition table or boot sector"),
    (3, b"NTFS    ", "an NTFS filesystem"),
    (0, b"LABELONE", "an LVM physical volume"),
    (512, b"LABELONE", "an LVM physical volume"),
    (4096, b"\xfc\x4e\x2b\xa9", "an md RAID member"),
)
_HEAD_BYTES = 65608


def signatures(fd: int) -> list[str]:
    """Filesystem, volume and partition-table signatures on the device open on ``fd``.

    ``blkid -p`` reads the same device through ``/proc/self/fd/N``. Its ``PART_ENTRY_*``
    keys describe the partition's entry in its parent's table, not the content, so a blank
    partition holds no signature. The magic bytes are read with ``pread`` on ``fd``, so a
    missing blkid never lets a write through.
    """
    found = _blkid_signatures(fd)
    try:
        head = os.pread(fd, _HEAD_BYTES, 0)
    except OSError as exc:
        # Unreadable means unknown, and unknown is not safe to overwrite.
        return [*found, f"unreadable content ({exc.strerror})"]
    if found:
        return found  # blkid named it; the magic bytes would only say it again, vaguer
    return [
        what for offset, magic, what in _SIGNATURES if head[offset : offset + len(magic)] == magic
    ]


def _blkid_signatures(fd: int) -> list[str]:
    blkid = find_program("blkid")
    if blkid is None:
        return []
    try:
        run = run_contained(
            [blkid, "-p", "-o", "export", f"/proc/self/fd/{fd}"], timeout=20, pass_fds=(fd,)
        )
    except OSError:
        return []
    if run.ended == EXITED and run.returncode == 0:  # 2: nothing found
        stdout = run.out.decode("utf-8", "replace")
        fields = dict(line.split("=", 1) for line in stdout.splitlines() if "=" in line)
        found = []
        if fields.get("TYPE"):
            usage = fields.get("USAGE", "")
            what = "filesystem" if usage == "filesystem" else "signature"
            kind = fields["TYPE"]
            found.append(f"{'an' if kind[0] in 'aeiouAEIOU' else 'a'} {kind} {what} (blkid)")
        if fields.get("PTTYPE"):
            found.append(f"a {fields['PTTYPE']} partition table (blkid)")
        unknown = {k for k in fields if not _is_part_entry(k) and k not in _BLKID_NOT_CONTENT} - {
            "TYPE",
            "PTTYPE",
        }
        if not found and unknown:
            found.append(f"an unnamed signature (blkid: {', '.join(sorted(unknown))})")
        return found
    return []


# Keys that describe where the device sits, not what it holds.
_BLKID_NOT_CONTENT = frozenset({"DEVNAME", "USAGE", "VERSION", "UUID", "UUID_SUB", "LABEL",
                                "BLOCK_SIZE", "PTUUID", "SBBADCSUM"})  # fmt: skip


def _is_part_entry(key: str) -> bool:
    return key.startswith("PART_ENTRY_")
