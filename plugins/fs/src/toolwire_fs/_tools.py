"""The file tools: read_file, list_dir, find, grep, write_file, delete_file, and their toolset."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

from pydantic import Field

from toolwire import Capability, ToolEffect, Toolset, tool_fn
from toolwire_fs._errors import BinaryFileError, FileTooLargeError, FsError
from toolwire_fs._root import FsRoot

__all__ = [
    "ALLOW_DELETE_ENV",
    "DEFAULT_MAX_READ_BYTES",
    "DEFAULT_MAX_WRITE_BYTES",
    "MAX_GREP_MATCHES",
    "MAX_LISTED",
    "MAX_READ_ENV",
    "MAX_WRITE_ENV",
    "ROOT_ENV",
    "fs_toolset",
    "fs_toolset_from_env",
]

ROOT_ENV = "TOOLWIRE_FS_ROOT"
ALLOW_DELETE_ENV = "TOOLWIRE_FS_ALLOW_DELETE"
MAX_READ_ENV = "TOOLWIRE_FS_MAX_READ_BYTES"
MAX_WRITE_ENV = "TOOLWIRE_FS_MAX_WRITE_BYTES"

DEFAULT_MAX_READ_BYTES = 256 * 1024
DEFAULT_MAX_WRITE_BYTES = 1024 * 1024
#: list_dir and find show at most this many entries.
MAX_LISTED = 1000
#: grep shows at most this many matching lines ...
MAX_GREP_MATCHES = 200
#: ... each cut to this many characters.
MAX_GREP_LINE = 300
# How much of a file is sniffed for NUL bytes to call it binary.
_SNIFF = 8192
_NEW_FILE_MODE = 0o644

_FS = frozenset({Capability.FILESYSTEM})

# Parameter types, at module level so tool_fn can resolve them from the closures.
_Offset = Annotated[int, Field(ge=0)]
_Limit = Annotated[int, Field(ge=1)] | None


def _os_error(action: str, shown: str, exc: OSError) -> FsError:
    # strerror only: str(exc) would carry the real (possibly symlink-resolved) path.
    reason = exc.strerror or type(exc).__name__
    return FsError(f"cannot {action} {shown!r}: {reason}")


def _is_binary(sample: bytes) -> bool:
    return b"\x00" in sample


class _FileTools:
    """The configuration the tools close over: the root and the size limits."""

    __slots__ = ("max_read", "max_write", "root")

    def __init__(self, root: FsRoot, max_read: int, max_write: int) -> None:
        self.root = root
        self.max_read = max_read
        self.max_write = max_write

    # -- read_file ----------------------------------------------------------------------

    def read(self, path: str, offset: int, limit: int | None) -> str:
        real = self.root.resolve(path)
        try:
            st = real.stat()
        except OSError as exc:
            raise _os_error("read", path, exc) from None
        if stat.S_ISDIR(st.st_mode):
            raise FsError(f"{path!r} is a directory; use list_dir to see what it holds")
        if not stat.S_ISREG(st.st_mode):
            raise FsError(f"{path!r} is not a regular file")
        try:
            if offset == 0 and limit is None:
                return self._read_whole(real, path, st.st_size)
            return self._read_lines(real, path, st.st_size, offset, limit)
        except OSError as exc:
            raise _os_error("read", path, exc) from None

    def _too_large(self, path: str, size: int) -> FileTooLargeError:
        return FileTooLargeError(
            f"{path!r} is {size} bytes, over the read limit of {self.max_read} bytes; "
            f"read part of it with offset and limit (in lines)"
        )

    def _read_whole(self, real: Path, path: str, size: int) -> str:
        if size > self.max_read:
            raise self._too_large(path, size)
        with open(real, "rb") as f:
            data = f.read(self.max_read + 1)
        if len(data) > self.max_read:  # it grew since stat
            raise self._too_large(path, len(data))
        return _decode(data, path, size)

    def _read_lines(self, real: Path, path: str, size: int, offset: int, limit: int | None) -> str:
        chunks: list[bytes] = []
        total = 0
        with open(real, "rb") as f:
            if _is_binary(f.peek(_SNIFF)[:_SNIFF]):
                raise _binary(path, size)
            for number, line in enumerate(f):
                if number < offset:
                    continue
                if limit is not None and len(chunks) >= limit:
                    break
                total += len(line)
                if total > self.max_read:
                    raise FileTooLargeError(
                        f"lines {offset}..{offset + len(chunks)} of {path!r} are over the read "
                        f"limit of {self.max_read} bytes; ask for fewer lines"
                    )
                chunks.append(line)
        return _decode(b"".join(chunks), path, size)

    # -- list_dir -----------------------------------------------------------------------

    def list(self, path: str) -> str:
        real = self.root.resolve(path)
        if not real.is_dir():
            if real.exists():
                raise FsError(f"{path!r} is a file, not a directory; use read_file to read it")
            raise FsError(f"no such directory {path!r}")
        try:
            with os.scandir(real) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            raise _os_error("list", path, exc) from None
        if not entries:
            return "(empty directory)"
        lines = [_entry_line(e) for e in entries[:MAX_LISTED]]
        if len(entries) > MAX_LISTED:
            lines.append(f"... {len(entries) - MAX_LISTED} more entries not shown")
        return "\n".join(lines)

    # -- find ---------------------------------------------------------------------------

    def find(self, pattern: str, path: str) -> str:
        _check_pattern(pattern, "pattern")
        base = self._directory(path)
        found: list[str] = []
        more = False
        try:
            for match in base.glob(pattern):
                if not self.root.inside(os.path.realpath(match)):
                    continue  # a link out of the root: not even its name is useful
                if len(found) >= MAX_LISTED:
                    more = True
                    break
                shown = self.root.show(match)
                found.append(shown + _marker(match))
        except ValueError as exc:  # pathlib refuses some patterns ('**a', '')
            raise FsError(f"invalid glob pattern {pattern!r}: {exc}") from None
        except OSError as exc:
            raise _os_error("search", path, exc) from None
        if not found:
            return f"(no matches for {pattern!r} under {path!r})"
        found.sort()
        if more:
            found.append("... more matches not shown; narrow the pattern or the path")
        return "\n".join(found)

    def _directory(self, path: str) -> Path:
        real = self.root.resolve(path)
        if not real.is_dir():
            if real.exists():
                raise FsError(f"{path!r} is a file, not a directory")
            raise FsError(f"no such directory {path!r}")
        return real

    # -- grep ---------------------------------------------------------------------------

    def grep(self, pattern: str, path: str, glob: str | None) -> str:
        try:
            rx = re.compile(pattern)
        except re.error as exc:
            raise FsError(f"invalid regular expression {pattern!r}: {exc}") from None
        if glob is not None:
            _check_pattern(glob, "glob")
        real = self.root.resolve(path)
        if real.is_file():
            files: Iterator[Path] = iter((real,))
            base = real.parent
        elif real.is_dir():
            files = self._walk(real)
            base = real
        else:
            raise FsError(f"no such file or directory {path!r}")
        out: list[str] = []
        more = False
        for file in files:
            if glob is not None and not _glob_match(file.relative_to(base), glob):
                continue
            for line in self._grep_file(file, rx):
                if len(out) >= MAX_GREP_MATCHES:
                    more = True
                    break
                out.append(line)
            if more:
                break
        if not out:
            return f"(no matches for {pattern!r} under {path!r})"
        if more:
            out.append(
                f"... more than {MAX_GREP_MATCHES} matching lines; narrow the pattern, "
                f"the path or the glob"
            )
        return "\n".join(out)

    def _walk(self, top: Path) -> Iterator[Path]:
        # os.walk does not descend into symbolic links to directories.
        for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
            dirnames.sort()
            for name in sorted(filenames):
                yield Path(dirpath, name)

    def _grep_file(self, file: Path, rx: re.Pattern[str]) -> Iterator[str]:
        real = os.path.realpath(file)
        if not self.root.inside(real) or not os.path.isfile(real):
            return
        shown = self.root.show(file)
        try:
            with open(real, "rb") as f:
                if _is_binary(f.peek(_SNIFF)[:_SNIFF]):
                    return
                for number, raw in enumerate(f, start=1):
                    line = raw.decode("utf-8", "replace").rstrip("\r\n")
                    if rx.search(line):
                        if len(line) > MAX_GREP_LINE:
                            line = line[:MAX_GREP_LINE] + "..."
                        yield f"{shown}:{number}: {line}"
        except OSError:
            return  # unreadable files are skipped, as grep -s does

    # -- write_file ---------------------------------------------------------------------

    def write(self, path: str, content: str) -> str:
        data = content.encode("utf-8")
        if len(data) > self.max_write:
            raise FileTooLargeError(
                f"content for {path!r} is {len(data)} bytes, over the write limit of "
                f"{self.max_write} bytes; nothing was written"
            )
        real = self.root.resolve(path)
        if real == self.root.path or real.is_dir():
            raise FsError(f"{path!r} is a directory; give the path of a file")
        try:
            real.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise FsError(f"cannot write {path!r}: a parent of it is a file") from None
        except OSError as exc:
            raise _os_error("create the directory of", path, exc) from None
        # The parent was created (or swapped) after the check: check its real path again.
        if not self.root.inside(os.path.realpath(real.parent)):
            raise FsError(f"cannot write {path!r}: its directory changed while writing")
        try:
            mode = _existing_mode(real)
            _atomic_write(real, data, mode)
        except OSError as exc:
            raise _os_error("write", path, exc) from None
        return f"wrote {len(data)} bytes to {self.root.show(real)}"

    # -- delete_file --------------------------------------------------------------------

    def delete(self, path: str) -> str:
        real = self.root.resolve(path, follow_last=False)
        try:
            st = real.lstat()
        except FileNotFoundError:
            raise FsError(f"no such file {path!r}") from None
        except OSError as exc:
            raise _os_error("delete", path, exc) from None
        if stat.S_ISDIR(st.st_mode):
            raise FsError(f"{path!r} is a directory; delete_file removes single files")
        try:
            real.unlink()
        except OSError as exc:
            raise _os_error("delete", path, exc) from None
        return f"deleted {self.root.show(real)}"


def _decode(data: bytes, path: str, size: int) -> str:
    if _is_binary(data[:_SNIFF]):
        raise _binary(path, size)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise BinaryFileError(
            f"{path!r} is not UTF-8 text ({size} bytes); read_file returns text only"
        ) from None


def _binary(path: str, size: int) -> BinaryFileError:
    return BinaryFileError(f"{path!r} is a binary file ({size} bytes); read_file returns text only")


def _entry_line(entry: os.DirEntry[str]) -> str:
    # A link's target is never shown: it may lie outside the root.
    if entry.is_symlink():
        return entry.name + "@"
    try:
        if entry.is_dir():
            return entry.name + "/"
        size = entry.stat().st_size
    except OSError:
        return entry.name
    return f"{entry.name} ({size} bytes)"


def _marker(path: Path) -> str:
    if path.is_symlink():
        return "@"
    return "/" if path.is_dir() else ""


def _check_pattern(pattern: str, what: str) -> None:
    if not pattern:
        raise FsError(f"the {what} is empty; give a glob such as '*.py' or '**/*.md'")
    p = PurePosixPath(pattern)
    if p.is_absolute() or Path(pattern).is_absolute():
        raise FsError(f"the {what} {pattern!r} is absolute; give a glob relative to the path")
    if ".." in p.parts:
        raise FsError(f"the {what} {pattern!r} uses '..'; globs must stay under the path")


def _glob_match(rel: Path, glob: str) -> bool:
    try:
        return PurePosixPath(rel.as_posix()).match(glob)
    except ValueError as exc:
        raise FsError(f"invalid glob {glob!r}: {exc}") from None


def _existing_mode(real: Path) -> int:
    try:
        st = real.stat()
    except FileNotFoundError:
        return _NEW_FILE_MODE
    if not stat.S_ISREG(st.st_mode):
        raise IsADirectoryError(0, "not a regular file")
    return stat.S_IMODE(st.st_mode)


def _atomic_write(real: Path, data: bytes, mode: int) -> None:
    """Write to a temporary file beside the target, then rename over it: all or nothing."""
    fd, tmp = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _positive(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise FsError(f"{name} must be a positive int, got {value!r} ({type(value).__name__})")
    return value


def fs_toolset(
    root: str | os.PathLike[str] | FsRoot,
    *,
    max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
    max_write_bytes: int = DEFAULT_MAX_WRITE_BYTES,
    allow_delete: bool = False,
    write_off: bool = False,
    name: str = "fs",
) -> Toolset:
    """A toolset of file tools confined to ``root``.

    Tools: ``read_file``, ``list_dir``, ``find``, ``grep`` (read-only,
    idempotent), ``write_file`` (mutating) and, with ``allow_delete=True``,
    ``delete_file`` (destructive, added *off*: a turn must select it
    explicitly). ``write_off=True`` adds ``write_file`` off as well. Every tool
    needs the ``filesystem`` capability. Tools raise
    :class:`FsError` (or a subclass) with a message meant for the model.
    """
    fs_root = root if isinstance(root, FsRoot) else FsRoot(root)
    tools = _FileTools(
        fs_root,
        _positive("max_read_bytes", max_read_bytes),
        _positive("max_write_bytes", max_write_bytes),
    )
    read_only: dict[str, Any] = {
        "effect": ToolEffect.READ_ONLY,
        "capabilities": _FS,
        "idempotent": True,
    }

    @tool_fn(**read_only)
    def read_file(path: str, offset: _Offset = 0, limit: _Limit = None) -> str:
        """Read a UTF-8 text file under the root.

        Args:
            path: The file, relative to the root.
            offset: How many lines to skip from the start.
            limit: The most lines to return (all the rest when not given).
        """
        return tools.read(path, offset, limit)

    @tool_fn(**read_only)
    def list_dir(path: str = ".") -> str:
        """List a directory under the root, one entry per line.

        Directories end in '/', symbolic links in '@'; files show their size.

        Args:
            path: The directory, relative to the root.
        """
        return tools.list(path)

    @tool_fn(**read_only)
    def find(pattern: str, path: str = ".") -> str:
        """Find files and directories whose path matches a glob, one per line.

        Args:
            pattern: A glob relative to `path`: '*.py' for this directory only,
                '**/*.py' for every depth.
            path: The directory to search, relative to the root.
        """
        return tools.find(pattern, path)

    @tool_fn(**read_only)
    def grep(pattern: str, path: str = ".", glob: str | None = None) -> str:
        """Search text files for lines matching a regular expression.

        Each match is shown as 'file:line: text'; binary files are skipped.

        Args:
            pattern: A Python regular expression.
            path: A file or directory to search, relative to the root.
            glob: Only search files whose path matches this glob ('*.py', 'src/*.ts').
        """
        return tools.grep(pattern, path, glob)

    @tool_fn(
        effect=ToolEffect.MUTATING,
        capabilities=_FS,
        # Writing the same content to the same path twice leaves the same file.
        idempotent=True,
    )
    def write_file(path: str, content: str) -> str:
        """Create or replace a UTF-8 text file under the root, creating parent directories.

        Args:
            path: The file, relative to the root.
            content: The whole new content of the file.
        """
        return tools.write(path, content)

    toolset = Toolset(
        name,
        [read_file, list_dir, find, grep],
        description="file tools confined to a root directory",
    )
    toolset.add(write_file, off=write_off)
    if allow_delete:

        @tool_fn(effect=ToolEffect.DESTRUCTIVE, capabilities=_FS, idempotent=False)
        def delete_file(path: str) -> str:
            """Delete a file under the root (a symbolic link is removed, not its target).

            Args:
                path: The file, relative to the root.
            """
            return tools.delete(path)

        toolset.add(delete_file, off=True)
    return toolset


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


def _env_int(environ: Mapping[str, str], key: str, default: int) -> int:
    raw = environ.get(key, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise FsError(f"{key} must be a positive number of bytes, got {raw!r}")
    return value


def fs_toolset_from_env(environ: Mapping[str, str] | None = None) -> Toolset:
    """The toolset the plugin registers, configured from the environment.

    ``TOOLWIRE_FS_ROOT`` (default: the current directory, read now),
    ``TOOLWIRE_FS_MAX_READ_BYTES``, ``TOOLWIRE_FS_MAX_WRITE_BYTES``, and
    ``TOOLWIRE_FS_ALLOW_DELETE=1`` to add the (off by default) delete tool.

    Without ``TOOLWIRE_FS_ROOT`` the root is wherever the process started, so
    installing the pack must not hand the model write access to it:
    ``write_file`` is then added *off* (a turn selects it explicitly). Naming
    the root turns it on.
    """
    env = os.environ if environ is None else environ
    allow = env.get(ALLOW_DELETE_ENV, "").strip().lower()
    if allow not in _TRUE | _FALSE:
        raise FsError(f"{ALLOW_DELETE_ENV} must be 1 or 0, got {env[ALLOW_DELETE_ENV]!r}")
    root = env.get(ROOT_ENV, "").strip()
    return fs_toolset(
        root or os.getcwd(),
        max_read_bytes=_env_int(env, MAX_READ_ENV, DEFAULT_MAX_READ_BYTES),
        max_write_bytes=_env_int(env, MAX_WRITE_ENV, DEFAULT_MAX_WRITE_BYTES),
        allow_delete=allow in _TRUE,
        write_off=not root,
    )
