"""toolwire-mcp's client half: connections to MCP servers (stdio, Streamable HTTP, SSE), the
OAuth client, the tool-list cache, the answers to a server's elicitation and sampling, tasks
followed, and the toolset that serves a server's tools. It never imports the gateway half
(import-linter's contract says so)."""
