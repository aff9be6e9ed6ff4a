"""toolwire-mcp's gateway half: a toolwire toolset served over MCP (the server, its JWT
resource server and tokens, approval, served resources and prompts, sessions and the event
store, tasks served, the approval console). It may use the client half (upstream servers it
serves), never the reverse."""
