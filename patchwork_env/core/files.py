"""Writing files so that nothing is ever half written: the one atomic writer of the project, and the
check of an output path made before the work that will fill it.

``write_atomic(path, text)`` writes a temporary file beside ``path`` (a name unique to this process),
flushes it to disk and renames it over ``path``: a reader sees the old file or the new one, never a
part, and two writers of one path leave one whole file. ``check_output_path(path, option)`` says, in
one line, why ``path`` cannot receive a file (a folder, a FIFO, a device, a missing or read-only
folder) before any game is played or any network trained.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path


class OutputPathError(ValueError):
    """An output path that cannot receive the file (checked before the work)."""


def check_output_path(path: str | os.PathLike[str], option: str = "output") -> Path:
    """``path`` as a ``Path`` if a regular file can be written there (it exists as one, or its
    folder exists and is writable); else ``OutputPathError`` naming ``option`` and the reason."""
    out = Path(path)
    try:
        mode = out.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise OutputPathError(f"{option}: cannot use {out} ({exc.strerror or exc})") from None
    if mode is not None and not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "not a regular file"
        raise OutputPathError(f"{option}: {out} is {kind}; give the path of a file")
    parent = out.absolute().parent
    if not parent.is_dir():
        raise OutputPathError(f"{option}: the folder {parent} does not exist (or is not a folder)")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputPathError(f"{option}: the folder {parent} is not writable")
    try:  # what permissions do not tell (root in /proc, a read-only mount): a file made and removed
        fd, probe = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".probe", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise OutputPathError(f"{option}: cannot write a file in {parent} ({exc.strerror or exc})") from None
    return out


def check_output_folder(path: str | os.PathLike[str], option: str = "output folder") -> Path:
    """``path`` as a folder files can be written into, made now if it does not exist (its parent
    must), before any work; else ``OutputPathError`` naming ``option`` and the reason."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise OutputPathError(f"{option}: {folder} exists and is not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputPathError(f"{option}: cannot make the folder {folder} ({exc.strerror or exc})") from None
    check_output_path(folder / ".write-probe", option)
    return folder


def write_atomic(path: str | os.PathLike[str], data: str | bytes, encoding: str = "utf-8") -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder, fsync and rename."""
    target = Path(path)
    payload = data.encode(encoding) if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=f".{os.getpid()}.tmp", dir=target.absolute().parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # the rename itself reaches the disk
        dir_fd = os.open(target.absolute().parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
