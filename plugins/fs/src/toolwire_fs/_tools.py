"""The file tools: read_file, list_dir, find, grep, write_file, delete_file, and their toolset."""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO, TypeVar, cast

from pydantic import Field

from toolwire import Capability, ToolEffect, Toolset, tool_fn
from toolwire_fs._errors import BinaryFileError, FileTooLargeError, FsError
from toolwire_fs._root import FsRoot
from toolwire_fs._safe import (
    DEFAULT_DENY,
    Deny,
    Walk,
    bounded_lines,
    glob_matches,
    open_dir_under,
    open_under,
)

if TYPE_CHECKING:
    # Imported by grep itself: compiling its pattern tables at import (50 ms) would make
    # every application pay for a tool it may never call.
    import regex

__all__ = [
    "ALLOW_DELETE_ENV",
    "ALLOW_SECRETS_ENV",
    "DEFAULT_DENY",
    "DENY_ENV",
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
DENY_ENV = "TOOLWIRE_FS_DENY"
ALLOW_SECRETS_ENV = "TOOLWIRE_FS_ALLOW_SECRETS"

DEFAULT_MAX_READ_BYTES = 256 * 1024
DEFAULT_MAX_WRITE_BYTES = 1024 * 1024
#: list_dir and find show at most this many entries.
MAX_LISTED = 1000
#: grep shows at most this many matching lines ...
MAX_GREP_MATCHES = 200
#: ... each cut to this many characters.
MAX_GREP_LINE = 300
#: grep searches the first this many bytes of each line (a 256 MiB line costs 1 MiB).
MAX_GREP_SCAN = 1024 * 1024
#: find and grep visit at most this many directories ...
MAX_WALKED_DIRS = 20_000
#: ... and stop after this many seconds (grep's pattern included).
WALK_SECONDS = 10.0
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


_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_F = TypeVar("_F", bound=Callable[..., str])


def _contained(action: str, where: int = 0) -> Callable[[_F], _F]:
    """Any OSError out of a tool method as an FsError naming the path as the model gave it,
    with the error's text only: str(exc) carries the real path (the root's location)."""

    def wrap(fn: _F) -> _F:
        @functools.wraps(fn)
        def contained(self: Any, *args: Any, **kwargs: Any) -> str:
            try:
                return fn(self, *args, **kwargs)
            except OSError as exc:
                shown = args[where] if len(args) > where else "."
                raise _os_error(action, str(shown), exc) from None

        return cast(_F, contained)

    return wrap


def _is_binary(sample: bytes) -> bool:
    return b"\x00" in sample


class _FileTools:
    """The configuration the tools close over: the root, the deny-list and the limits."""

    __slots__ = ("deny", "max_read", "max_write", "root")

    def __init__(self, root: FsRoot, max_read: int, max_write: int, deny: Deny) -> None:
        self.root = root
        self.max_read = max_read
        self.max_write = max_write
        self.deny = deny

    def _resolve(self, path: str, *, follow_last: bool = True) -> Path:
        """The real path under the root, refused when it (or what a link in it leads to)
        is on the deny-list."""
        real = self.root.resolve(path, follow_last=follow_last)
        denied = self.deny.parts(self.root.relative(path).parts) or self.deny.parts(
            real.relative_to(self.root.path).parts
        )
        if denied is not None:
            raise FsError(
                f"{path!r} is refused: {denied!r} looks like secrets or credentials (the file "
                f"tools' deny list), so the file tools do not touch it"
            )
        return real

    def _open(self, real: Path, path: str, action: str) -> int:
        # Non-blocking: opening a FIFO for reading would wait for a writer (for ever). The
        # file type is checked on the descriptor, then a regular file reads as usual.
        try:
            return open_under(self.root.path, real, os.O_RDONLY | _NONBLOCK, path)
        except OSError as exc:
            raise _os_error(action, path, exc) from None

    # -- read_file ----------------------------------------------------------------------

    @_contained("read")
    def read(self, path: str, offset: int, limit: int | None) -> str:
        real = self._resolve(path)
        if real == self.root.path:
            raise FsError(f"{path!r} is a directory; use list_dir to see what it holds")
        fd = self._open(real, path, "read")
        try:
            st = os.fstat(fd)  # what was opened, not what the path names now
        except OSError as exc:
            os.close(fd)
            raise _os_error("read", path, exc) from None
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            if stat.S_ISDIR(st.st_mode):
                raise FsError(f"{path!r} is a directory; use list_dir to see what it holds")
            raise FsError(f"{path!r} is not a regular file")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as f:
            try:
                if offset == 0 and limit is None:
                    return self._read_whole(f, path, st.st_size)
                return self._read_lines(f, path, st.st_size, offset, limit)
            except OSError as exc:
                raise _os_error("read", path, exc) from None

    def _too_large(self, path: str, size: int) -> FileTooLargeError:
        return FileTooLargeError(
            f"{path!r} is {size} bytes, over the read limit of {self.max_read} bytes; "
            f"read part of it with offset and limit (in lines)"
        )

    def _read_whole(self, f: BinaryIO, path: str, size: int) -> str:
        if size > self.max_read:
            raise self._too_large(path, size)
        data = f.read(self.max_read + 1)
        if len(data) > self.max_read:  # it grew since stat
            raise self._too_large(path, len(data))
        return _decode(data, path, size)

    def _read_lines(self, f: BinaryIO, path: str, size: int, offset: int, limit: int | None) -> str:
        # Lines are read in bounded pieces: a single huge line costs at most the read
        # limit in memory, whether it is skipped or asked for.
        if _is_binary(f.read(_SNIFF)):
            raise _binary(path, size)
        f.seek(0)
        chunks: list[bytes] = []
        total = 0
        for number, (line, longer) in enumerate(bounded_lines(f, self.max_read)):
            if number < offset:
                continue
            if limit is not None and len(chunks) >= limit:
                break
            total += len(line)
            if longer or total > self.max_read:
                raise FileTooLargeError(
                    f"lines {offset}..{offset + len(chunks)} of {path!r} are over the read "
                    f"limit of {self.max_read} bytes; ask for fewer lines"
                )
            chunks.append(line)
        return _decode(b"".join(chunks), path, size)

    # -- list_dir -----------------------------------------------------------------------

    @_contained("list")
    def list(self, path: str) -> str:
        real = self._resolve(path)
        if not real.is_dir():
            if real.exists():
                raise FsError(f"{path!r} is a file, not a directory; use read_file to read it")
            raise FsError(f"no such directory {path!r}")
        try:
            fd = open_dir_under(self.root.path, real.relative_to(self.root.path).parts, path)
        except OSError as exc:
            raise _os_error("list", path, exc) from None
        try:
            with os.scandir(fd) as it:
                entries = sorted(it, key=lambda e: e.name)
            shown = [e for e in entries if not self.deny.name(e.name)]
            # Entries of a descriptor's listing are looked at through it: still open here.
            lines = [_entry_line(e) for e in shown[:MAX_LISTED]]
        except OSError as exc:
            raise _os_error("list", path, exc) from None
        finally:
            os.close(fd)
        hidden = len(entries) - len(shown)
        hid = f"{hidden} {'entry' if hidden == 1 else 'entries'} hidden by the deny list"
        if not shown:
            return "(empty directory)" + (f" ({hid})" if hidden else "")
        if len(shown) > MAX_LISTED:
            lines.append(f"... {len(shown) - MAX_LISTED} more entries not shown")
        if hidden:
            lines.append(f"({hid}: secrets, credentials)")
        return "\n".join(lines)

    # -- find ---------------------------------------------------------------------------

    @_contained("search", 1)
    def find(self, pattern: str, path: str) -> str:
        _check_pattern(pattern, "pattern")
        base = self._directory(path)
        walk = Walk(self.deny, MAX_WALKED_DIRS, WALK_SECONDS)
        found: list[str] = []
        more = False
        for parts, entry in walk.entries(base):
            if not glob_matches(parts, pattern):
                continue
            if entry.is_symlink() and not self.root.inside(os.path.realpath(entry.path)):
                continue  # a link out of the root: not even its name is useful
            if len(found) >= MAX_LISTED:
                more = True
                break
            found.append(self.root.show(Path(entry.path)) + _marker(Path(entry.path)))
        stopped = _stopped(walk)
        if not found:
            return f"(no matches for {pattern!r} under {path!r})" + stopped
        found.sort()
        if more:
            found.append("... more matches not shown; narrow the pattern or the path")
        return "\n".join(found) + stopped

    def _directory(self, path: str) -> Path:
        real = self._resolve(path)
        if not real.is_dir():
            if real.exists():
                raise FsError(f"{path!r} is a file, not a directory")
            raise FsError(f"no such directory {path!r}")
        return real

    # -- grep ---------------------------------------------------------------------------

    @_contained("search", 1)
    def grep(self, pattern: str, path: str, glob: str | None) -> str:
        import regex  # here, not at the top: see the TYPE_CHECKING import

        try:
            rx = regex.compile(pattern)
        except (regex.error, ValueError, OverflowError) as exc:
            raise FsError(f"invalid regular expression {pattern!r}: {exc}") from None
        if glob is not None:
            _check_pattern(glob, "glob")
        real = self._resolve(path)
        walk = Walk(self.deny, MAX_WALKED_DIRS, WALK_SECONDS)
        files: Iterator[Path]
        if real.is_file():
            files = iter((real,))
            base = real.parent
        elif real.is_dir():
            files = (
                Path(entry.path)
                for _, entry in walk.entries(real)
                if entry.is_file() or entry.is_symlink()
            )
            base = real
        else:
            raise FsError(f"no such file or directory {path!r}")
        out: list[str] = []
        more = False
        try:
            for file in files:
                if glob is not None and not _glob_match(file.relative_to(base), glob):
                    continue
                for line in self._grep_file(file, rx, walk):
                    if len(out) >= MAX_GREP_MATCHES:
                        more = True
                        break
                    out.append(line)
                if more or walk.expired():
                    break
        except TimeoutError:
            walk.stopped = "time"
        stopped = _stopped(walk)
        if not out:
            return f"(no matches for {pattern!r} under {path!r})" + stopped
        if more:
            out.append(
                f"... more than {MAX_GREP_MATCHES} matching lines; narrow the pattern, "
                f"the path or the glob"
            )
        return "\n".join(out) + stopped

    def _grep_file(self, file: Path, rx: regex.Pattern[str], walk: Walk) -> Iterator[str]:
        real = Path(os.path.realpath(file))
        if not self.root.inside(real) or not real.is_file():
            return
        if self.deny.parts(real.relative_to(self.root.path).parts) is not None:
            return
        shown = self.root.show(file)
        try:
            fd = open_under(self.root.path, real, os.O_RDONLY, shown)
        except (OSError, FsError):
            return  # unreadable (or swapped) files are skipped, as grep -s does
        with os.fdopen(fd, "rb") as f:
            try:
                if _is_binary(f.read(_SNIFF)):
                    return
                f.seek(0)
                for number, (raw, _) in enumerate(bounded_lines(f, MAX_GREP_SCAN), start=1):
                    line = raw.decode("utf-8", "replace").rstrip("\r\n")
                    remaining = walk.deadline - time.monotonic()
                    if remaining <= 0:
                        raise TimeoutError
                    if rx.search(line, timeout=remaining):
                        if len(line) > MAX_GREP_LINE:
                            line = line[:MAX_GREP_LINE] + "..."
                        yield f"{shown}:{number}: {line}"
            except TimeoutError:  # an OSError, but the search's: grep() says it stopped
                raise
            except OSError:
                return

    # -- write_file ---------------------------------------------------------------------

    @_contained("write")
    def write(self, path: str, content: str) -> str:
        data = content.encode("utf-8")
        if len(data) > self.max_write:
            raise FileTooLargeError(
                f"content for {path!r} is {len(data)} bytes, over the write limit of "
                f"{self.max_write} bytes; nothing was written"
            )
        real = self._resolve(path)
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
            parent = open_dir_under(
                self.root.path, real.parent.relative_to(self.root.path).parts, path
            )
        except OSError as exc:
            raise _os_error("write", path, exc) from None
        try:
            mode = _existing_mode(parent, real.name, path)
            _atomic_write(parent, real.name, data, mode)
        except OSError as exc:
            raise _os_error("write", path, exc) from None
        finally:
            os.close(parent)
        return f"wrote {len(data)} bytes to {self.root.show(real)}"

    # -- delete_file --------------------------------------------------------------------

    @_contained("delete")
    def delete(self, path: str) -> str:
        real = self._resolve(path, follow_last=False)
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


def _stopped(walk: Walk) -> str:
    if walk.stopped == "time":
        return (
            f"\n... stopped after {WALK_SECONDS:g} s: the search took too long (a pattern with "
            f"nested repetition such as '(a+)+' can take forever); narrow the path or "
            f"simplify the pattern"
        )
    if walk.stopped == "size":
        return (
            f"\n... stopped after {MAX_WALKED_DIRS} directories; narrow the path to search the rest"
        )
    return ""


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
    if any("**" in part and part != "**" for part in p.parts):
        raise FsError(
            f"invalid glob pattern {pattern!r}: '**' can only be an entire path component "
            f"('**/*.py', not '**.py')"
        )


def _glob_match(rel: Path, glob: str) -> bool:
    try:
        return PurePosixPath(rel.as_posix()).match(glob)
    except ValueError as exc:
        raise FsError(f"invalid glob {glob!r}: {exc}") from None


def _existing_mode(parent: int, name: str, path: str) -> int:
    """The mode for the new content: the existing file's, without setuid, setgid and
    sticky bits; a read-only file is not replaced."""
    try:
        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return _NEW_FILE_MODE
    if not stat.S_ISREG(st.st_mode):
        raise FsError(f"{path!r} is not a regular file; it was not replaced")
    if not st.st_mode & stat.S_IWUSR:
        raise FsError(f"{path!r} is read-only; it was not replaced")
    return stat.S_IMODE(st.st_mode) & ~(stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX)


def _atomic_write(parent: int, name: str, data: bytes, mode: int) -> None:
    """Write a temporary file beside the target, then rename it over the target: all or
    nothing, both named relative to the parent's descriptor (no path is looked up twice)."""
    tmp = f".{name}.{secrets.token_hex(6)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, 0o600, dir_fd=parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            os.fchmod(f.fileno(), mode)
        os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=parent)
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
    deny: Iterable[str] = DEFAULT_DENY,
) -> Toolset:
    """A toolset of file tools confined to ``root``.

    Tools: ``read_file``, ``list_dir``, ``find``, ``grep`` (read-only,
    idempotent), ``write_file`` (mutating) and, with ``allow_delete=True``,
    ``delete_file`` (destructive, added *off*: a turn must select it
    explicitly). ``write_off=True`` adds ``write_file`` off as well. Every tool
    needs the ``filesystem`` capability. Tools raise
    :class:`FsError` (or a subclass) with a message meant for the model.

    ``deny``: name patterns (one path component each, case-insensitive) the tools
    treat as absent: refused by read, write and delete, left out of list_dir, find
    and grep. The default, :data:`DEFAULT_DENY`, covers environment files, VCS
    metadata, SSH/cloud/package-manager credentials and keys; ``deny=()`` turns it
    off.
    """
    fs_root = root if isinstance(root, FsRoot) else FsRoot(root)
    tools = _FileTools(
        fs_root,
        _positive("max_read_bytes", max_read_bytes),
        _positive("max_write_bytes", max_write_bytes),
        Deny(deny),
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
    ``TOOLWIRE_FS_MAX_READ_BYTES``, ``TOOLWIRE_FS_MAX_WRITE_BYTES``,
    ``TOOLWIRE_FS_ALLOW_DELETE=1`` to add the (off by default) delete tool,
    ``TOOLWIRE_FS_DENY`` (more deny patterns, comma separated) and
    ``TOOLWIRE_FS_ALLOW_SECRETS=1`` (drop the default deny list).

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
    secrets_ok = env.get(ALLOW_SECRETS_ENV, "").strip().lower()
    if secrets_ok not in _TRUE | _FALSE:
        raise FsError(f"{ALLOW_SECRETS_ENV} must be 1 or 0, got {env[ALLOW_SECRETS_ENV]!r}")
    extra = [p.strip() for p in env.get(DENY_ENV, "").split(",") if p.strip()]
    deny = (*(() if secrets_ok in _TRUE else DEFAULT_DENY), *extra)
    return fs_toolset(
        root or os.getcwd(),
        max_read_bytes=_env_int(env, MAX_READ_ENV, DEFAULT_MAX_READ_BYTES),
        max_write_bytes=_env_int(env, MAX_WRITE_ENV, DEFAULT_MAX_WRITE_BYTES),
        allow_delete=allow in _TRUE,
        write_off=not root,
        deny=deny,
    )
