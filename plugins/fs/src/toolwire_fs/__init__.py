"""toolwire-fs: file tools for toolwire, confined to a root directory.

``fs_toolset(root)`` builds the tools in code; the plugin (entry point
``fs`` in ``toolwire.toolsets``) registers them from ``TOOLWIRE_FS_ROOT``.
"""

from toolwire_fs._errors import BinaryFileError, FileTooLargeError, FsError, PathOutsideRootError
from toolwire_fs._root import FsRoot
from toolwire_fs._safe import DEFAULT_DENY
from toolwire_fs._tools import (
    ALLOW_DELETE_ENV,
    ALLOW_SECRETS_ENV,
    DEFAULT_MAX_READ_BYTES,
    DEFAULT_MAX_WRITE_BYTES,
    DENY_ENV,
    MAX_GREP_MATCHES,
    MAX_LISTED,
    MAX_READ_ENV,
    MAX_WRITE_ENV,
    ROOT_ENV,
    fs_toolset,
    fs_toolset_from_env,
)

__version__ = "0.1.0"

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
    "BinaryFileError",
    "FileTooLargeError",
    "FsError",
    "FsRoot",
    "PathOutsideRootError",
    "__version__",
    "fs_toolset",
    "fs_toolset_from_env",
]
