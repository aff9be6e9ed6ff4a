"""What a call to an MCP server raises when it cannot be answered, and how a failure
inside anyio's exception groups is named."""

from __future__ import annotations

from toolwire.exceptions import ToolwireError

__all__ = ["MCPCallError", "MCPConnectError"]


class MCPConnectError(ToolwireError, ConnectionError):
    """The MCP server could not be started or reached, or did not answer ``initialize``."""


class MCPCallError(ToolwireError, RuntimeError):
    """A call to the MCP server failed: no answer in time, the connection broke, or the
    server answered with a protocol error (the message says which)."""

    #: The message names the server and says what happened: an error result shows it
    #: alone, not the class name.
    toolwire_plain = True


def _leaf(exc: BaseException) -> BaseException:
    """The first real exception inside anyio's exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException) -> str:
    leaf = _leaf(exc)
    text = str(leaf)
    return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__
