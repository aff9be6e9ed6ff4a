"""toolwire-mcp: MCP servers as toolwire toolsets, under the organisation's policies, and
any toolwire toolset served over MCP.

- :func:`mcp_toolset` (``mcp_toolset("git", ["uvx", "mcp-server-git"])``, or a Streamable
  HTTP URL): an MCP server's tools as an ordinary toolset; :func:`connected` serves them
  from the caller's event loop for an ``async with`` block;
- :class:`ServerSpec`, :func:`load_config`: servers from code or from the ``mcpServers``
  JSON the MCP clients use; with this distribution installed, every configured server's
  tools appear in every toolwire application (entry point ``toolwire.toolsets: mcp``);
- :func:`serve_mcp` (and ``toolwire mcp serve``): the assembled toolset as an MCP server,
  with the application's :func:`resource` and :func:`prompt` definitions and the
  upstream servers' resources and prompts.

Built on the official ``mcp`` SDK, imported only when a server is used. See docs/mcp.md.
"""

from typing import TYPE_CHECKING

from toolwire.adapters import lazy_exports as _lazy_exports
from toolwire_mcp._version import __version__ as __version__

if TYPE_CHECKING:
    from toolwire_mcp._config import (
        CONFIG_ENV,
        ConfigError,
        ServerSpec,
        config_paths,
        load_config,
        load_config_report,
        trust_file,
        untrust_file,
    )
    from toolwire_mcp.client._client_features import (
        disable_sampling,
        enable_sampling,
        roots,
        sampling_enabled,
        set_roots,
    )
    from toolwire_mcp.client._elicit import (
        ElicitationRequest,
        elicitation_handler,
        set_elicitation_handler,
    )
    from toolwire_mcp.client._errors import MCPCallError, MCPConnectError
    from toolwire_mcp.client._handle import MCPServerHandle, mcp_server
    from toolwire_mcp.client._oauth import (
        IdTokenProvider,
        LoginAnswer,
        LoginHandler,
        adiscover_authorization_server,
        discover_authorization_server,
        login_handler,
        set_id_token_provider,
        set_login_handler,
        token_path,
    )
    from toolwire_mcp.client._progress import ProgressEvent, progress_handler, set_progress_handler
    from toolwire_mcp.client._registry import close_all, connected
    from toolwire_mcp.client._toolset import MCPToolError, mcp_toolset, metadata_for
    from toolwire_mcp.gateway._auth import load_tokens
    from toolwire_mcp.gateway._console import console_app, serve_console
    from toolwire_mcp.gateway._context import Elicited, MCPCallContext
    from toolwire_mcp.gateway._jwt import OAuthResource, load_oauth
    from toolwire_mcp.gateway._served import Prompt, Resource, prompt, resource, resource_updated
    from toolwire_mcp.gateway._server import build_server, serve_mcp

# The plugin module (imported at discovery) must stay cheap: nothing here imports the SDK
# until one of these names is read.
_LAZY = {
    "disable_sampling": "toolwire_mcp.client._client_features",
    "enable_sampling": "toolwire_mcp.client._client_features",
    "roots": "toolwire_mcp.client._client_features",
    "sampling_enabled": "toolwire_mcp.client._client_features",
    "set_roots": "toolwire_mcp.client._client_features",
    "CONFIG_ENV": "toolwire_mcp._config",
    "ConfigError": "toolwire_mcp._config",
    "ElicitationRequest": "toolwire_mcp.client._elicit",
    "Elicited": "toolwire_mcp.gateway._context",
    "elicitation_handler": "toolwire_mcp.client._elicit",
    "set_elicitation_handler": "toolwire_mcp.client._elicit",
    "MCPCallContext": "toolwire_mcp.gateway._context",
    "MCPCallError": "toolwire_mcp.client._errors",
    "MCPConnectError": "toolwire_mcp.client._errors",
    "MCPToolError": "toolwire_mcp.client._toolset",
    "MCPServerHandle": "toolwire_mcp.client._handle",
    "IdTokenProvider": "toolwire_mcp.client._oauth",
    "LoginAnswer": "toolwire_mcp.client._oauth",
    "LoginHandler": "toolwire_mcp.client._oauth",
    "adiscover_authorization_server": "toolwire_mcp.client._oauth",
    "discover_authorization_server": "toolwire_mcp.client._oauth",
    "login_handler": "toolwire_mcp.client._oauth",
    "set_id_token_provider": "toolwire_mcp.client._oauth",
    "set_login_handler": "toolwire_mcp.client._oauth",
    "token_path": "toolwire_mcp.client._oauth",
    "ProgressEvent": "toolwire_mcp.client._progress",
    "progress_handler": "toolwire_mcp.client._progress",
    "set_progress_handler": "toolwire_mcp.client._progress",
    "mcp_server": "toolwire_mcp.client._handle",
    "ServerSpec": "toolwire_mcp._config",
    "Prompt": "toolwire_mcp.gateway._served",
    "Resource": "toolwire_mcp.gateway._served",
    "prompt": "toolwire_mcp.gateway._served",
    "resource": "toolwire_mcp.gateway._served",
    "resource_updated": "toolwire_mcp.gateway._served",
    "build_server": "toolwire_mcp.gateway._server",
    "close_all": "toolwire_mcp.client._registry",
    "connected": "toolwire_mcp.client._registry",
    "config_paths": "toolwire_mcp._config",
    "load_config": "toolwire_mcp._config",
    "load_config_report": "toolwire_mcp._config",
    "trust_file": "toolwire_mcp._config",
    "untrust_file": "toolwire_mcp._config",
    "mcp_toolset": "toolwire_mcp.client._toolset",
    "metadata_for": "toolwire_mcp.client._toolset",
    "serve_mcp": "toolwire_mcp.gateway._server",
    "console_app": "toolwire_mcp.gateway._console",
    "serve_console": "toolwire_mcp.gateway._console",
    "load_tokens": "toolwire_mcp.gateway._auth",
    "OAuthResource": "toolwire_mcp.gateway._jwt",
    "load_oauth": "toolwire_mcp.gateway._jwt",
}

__getattr__, __dir__ = _lazy_exports("toolwire_mcp", _LAZY, globals())

__all__ = [
    "CONFIG_ENV",
    "ConfigError",
    "ElicitationRequest",
    "Elicited",
    "IdTokenProvider",
    "LoginAnswer",
    "LoginHandler",
    "MCPCallContext",
    "MCPCallError",
    "MCPConnectError",
    "MCPServerHandle",
    "MCPToolError",
    "OAuthResource",
    "ProgressEvent",
    "Prompt",
    "Resource",
    "ServerSpec",
    "adiscover_authorization_server",
    "build_server",
    "console_app",
    "close_all",
    "config_paths",
    "connected",
    "disable_sampling",
    "discover_authorization_server",
    "elicitation_handler",
    "enable_sampling",
    "load_config",
    "load_config_report",
    "load_oauth",
    "load_tokens",
    "login_handler",
    "mcp_server",
    "mcp_toolset",
    "metadata_for",
    "progress_handler",
    "prompt",
    "resource",
    "resource_updated",
    "roots",
    "sampling_enabled",
    "serve_console",
    "serve_mcp",
    "set_elicitation_handler",
    "set_id_token_provider",
    "set_login_handler",
    "set_progress_handler",
    "set_roots",
    "token_path",
    "trust_file",
    "untrust_file",
]
