"""The exceptions the file tools raise.

::

    ToolwireError
    └── FsError (ValueError)              a file tool refused or failed (message for the model)
        ├── PathOutsideRootError           the path leaves the root (absolute, '..', symbolic link)
        ├── FileTooLargeError              over the read or write size limit; nothing was written
        └── BinaryFileError                the file is not UTF-8 text

Every message names paths only as the model sent them or relative to the
root: nothing outside the root is ever revealed (not even a symbolic link's
target). An executor turns these exceptions into error results.
"""

from __future__ import annotations

from toolwire import ToolwireError

__all__ = ["BinaryFileError", "FileTooLargeError", "FsError", "PathOutsideRootError"]


class FsError(ToolwireError, ValueError):
    """A file tool refused the request or the file system failed; safe to show the model."""


class PathOutsideRootError(FsError):
    """The path is absolute outside the root, uses '..', or goes through an escaping link."""


class FileTooLargeError(FsError):
    """A read or write is over the configured size limit (a write then writes nothing)."""


class BinaryFileError(FsError):
    """The file is binary (holds NUL bytes) or is not valid UTF-8."""
