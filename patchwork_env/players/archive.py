"""Zip archives written by others (model files), read within limits checked before any byte is unpacked.

A model file is data: a benchmark that rates other people's files reads what it needs and runs
nothing the file holds, and a file's size claims are checked before memory is given to them. The
model formats read here are zip archives (SB3's ``model.zip``, ``torch.save``'s checkpoints,
numpy's ``.npz``), so ``checked_entries`` reads the archive's directory alone and refuses, in one
line, an archive with too many entries, an entry (compressed or unpacked) or a whole larger than
its ``ZipLimits``, or a compression other than stored and deflate (the two a bounded read can
stop: ``read_entry`` never returns more than the directory announced). A zip bomb is refused from
its directory, before it is inflated.
"""

from __future__ import annotations

import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO

COMPRESSIONS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}


class ArchiveError(ValueError):
    """A zip archive that is not one, or whose directory asks for more than its limits allow."""


class NotAnArchiveError(ArchiveError):
    """A file that is not a zip archive at all."""


@dataclass(frozen=True)
class ZipLimits:
    """What one kind of archive may hold, as its directory states it."""

    entries: int  # the most entries
    entry_bytes: int  # the largest entry, unpacked (and compressed)
    total_bytes: int  # all entries together, unpacked


def _mib(n: int) -> str:
    return f"{n / 2**20:g} MiB"


def checked_entries(archive: zipfile.ZipFile, limits: ZipLimits) -> dict[str, zipfile.ZipInfo]:
    """The entries of ``archive`` by name, if its directory keeps within ``limits``; else
    ``ArchiveError`` saying which entry asks for what and what is allowed."""
    infos = archive.infolist()
    if len(infos) > limits.entries:
        raise ArchiveError(f"the archive has {len(infos)} entries, more than the {limits.entries} allowed")
    total = 0
    entries: dict[str, zipfile.ZipInfo] = {}
    for info in infos:
        name = info.filename
        if name in entries:
            raise ArchiveError(f"the archive holds two entries named {name!r}")
        if info.compress_type not in COMPRESSIONS:
            raise ArchiveError(
                f"entry {name!r} is compressed with method {info.compress_type}; allowed: stored or deflate"
            )
        if info.flag_bits & 0x1:
            raise ArchiveError(f"entry {name!r} is encrypted")
        size = max(info.file_size, info.compress_size)
        if size > limits.entry_bytes:
            raise ArchiveError(
                f"entry {name!r} would unpack to {info.file_size} bytes ({info.compress_size} compressed), more "
                f"than the {_mib(limits.entry_bytes)} allowed"
            )
        total += info.file_size
        entries[name] = info
    if total > limits.total_bytes:
        raise ArchiveError(
            f"the archive would unpack to {total} bytes, more than the {_mib(limits.total_bytes)} allowed"
        )
    return entries


def _zip(file: str | Path | IO[bytes]) -> zipfile.ZipFile:
    """``file`` opened as a zip archive (its directory read, nothing unpacked), or ``NotAnArchiveError``."""
    try:
        return zipfile.ZipFile(file)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError) as exc:
        raise NotAnArchiveError(f"not a zip archive ({str(exc)[:120]})") from None


def open_archive(path: str | Path, limits: ZipLimits) -> tuple[zipfile.ZipFile, dict[str, zipfile.ZipInfo]]:
    """The zip archive at ``path`` and its checked entries (``checked_entries``); the caller closes
    the archive. ``ArchiveError`` if it is not a zip archive or breaks its limits."""
    archive = _zip(path)
    try:
        return archive, checked_entries(archive, limits)
    except ArchiveError:
        archive.close()
        raise


def open_entry(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> IO[bytes]:
    """A reader of one checked entry: it stops at the size the directory announced."""
    try:
        return archive.open(info)
    except (zipfile.BadZipFile, ValueError, NotImplementedError, RuntimeError, EOFError) as exc:
        raise ArchiveError(f"entry {info.filename!r} cannot be read ({exc})") from None


def read_entry(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """The bytes of one checked entry, never more than the directory announced (a damaged
    entry, or one that holds less or more than announced, is an ``ArchiveError``)."""
    try:
        with open_entry(archive, info) as stream:
            data = stream.read(info.file_size + 1)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, zlib.error) as exc:
        raise ArchiveError(f"entry {info.filename!r} is damaged ({exc})") from None
    if len(data) != info.file_size:
        raise ArchiveError(f"entry {info.filename!r} holds {len(data)} bytes, its directory says {info.file_size}")
    return data


def check_torch_file(file: str | Path | IO[bytes], limits: ZipLimits) -> None:
    """``ArchiveError`` unless ``file`` is in ``torch.save``'s zip format (the default since torch
    1.6) within ``limits``: ``torch.load`` gives each record the memory the directory announces,
    and inflates deflated records, so the directory is checked first. The older format, whose
    storages are given the sizes its pickle claims before they are read, is refused. A stream is
    left at its start, for ``torch.load``."""
    if not zipfile.is_zipfile(file):
        raise NotAnArchiveError("not a zip archive (the format torch.save writes since torch 1.6)")
    try:
        with _zip(file) as archive:
            checked_entries(archive, limits)
    finally:
        if not isinstance(file, (str, Path)):
            file.seek(0)
