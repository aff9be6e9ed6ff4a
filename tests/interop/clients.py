"""MCP clients nobody here wrote against the toolwire gateway (#26): the MCP Inspector's
CLI, the official TypeScript SDK's client and pydantic-ai's MCPToolset, each listing
tools, calling one with structured output, one the user approves through elicitation
(where the client can ask) and one the organisation's policy denies, and reading a
resource and a prompt. The Python SDK's own Client is the gateway's test suite's.

pydantic-ai's task client is also run against a gateway whose policy sends a call to an
approver (#44): the call answered as a task, its result once approved; and the TypeScript
SDK's 2025-11-25 task client (``callToolStream``) against long-running tools, one of
which asks its user inside the task.

Usage: clients.py WORKDIR NODE_MODULES PAI_PYTHON; run by run.sh, offline.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FAILED: list[str] = []


def check(what: str, ok: bool, seen: Any) -> None:
    print(f"  {'ok ' if ok else 'FAIL'} {what}" + ("" if ok else f": saw {seen!r}"))
    if not ok:
        FAILED.append(what)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_gateway(
    work: Path,
    policy: str = 'deny = ["shred"]\n',
    *more: str,
    name: str = "clients",
    app: str = "gateway_app",
) -> tuple[subprocess.Popen[bytes], str]:
    config = work / f"{name}-config"
    (config / "toolwire").mkdir(parents=True, exist_ok=True)
    (config / "toolwire" / "policy.toml").write_text(policy)
    (config / "toolwire" / "policy.toml").chmod(0o600)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.update(XDG_CONFIG_HOME=str(config), PYTHONPATH=str(HERE))
    log = (work / f"gateway-{name}.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolwire", "mcp", "serve", "--transport", "http",
         "--port", str(port), "--app", f"{app}:tools",
         *(("--resources", "gateway_app:resources", "--prompts", "gateway_app:prompts")
           if app == "gateway_app" else ()), *more],
        cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.2)
    proc.kill()
    sys.exit("the gateway did not start within 60 s")


def stop(gateway: subprocess.Popen[bytes]) -> None:
    gateway.terminate()
    try:
        gateway.wait(15)
    except subprocess.TimeoutExpired:
        gateway.kill()


def run(args: list[str], cwd: Path) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0 and not done.stdout.strip():
        return f"<exit {done.returncode}: {done.stderr.strip()[:800]}>"
    return done.stdout


def as_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return {"unparsed": text[-500:]}


def inspector(modules: Path, url: str) -> None:
    print("MCP Inspector CLI:")
    base = ["node", str(modules / ".bin" / "mcp-inspector"), "--cli", url]
    listed = as_json(run([*base, "--method", "tools/list"], modules.parent))
    tools = {t["name"]: t for t in listed.get("tools", [])}
    check(
        "tools/list shows add with its output schema",
        "outputSchema" in tools.get("add", {}),
        sorted(tools),
    )
    check("the policy-denied tool is not listed", "shred" not in tools, sorted(tools))
    added = as_json(
        run(
            [*base, "--method", "tools/call", "--tool-name", "add", "--tool-arg", "a=2", "b=3"],
            modules.parent,
        )
    )
    check("add returns structuredContent", added.get("structuredContent") == {"total": 5}, added)
    # The CLI cannot ask a user: the destructive call is denied, not run.
    wiped = run(
        [*base, "--method", "tools/call", "--tool-name", "wipe", "--tool-arg", "target=db"],
        modules.parent,
    )
    check(
        "wipe, with nobody to ask, is denied",
        "approval denied" in wiped and "wiped db" not in wiped,
        wiped[-300:],
    )
    read = as_json(
        run([*base, "--method", "resources/read", "--uri", "app://readme"], modules.parent)
    )
    check("resources/read", read.get("contents", [{}])[0].get("text") == "read me first", read)
    snap = as_json(
        run(
            [
                *base,
                "--method",
                "tools/call",
                "--tool-name",
                "snapshot",
                "--tool-arg",
                "caption=hi",
            ],
            modules.parent,
        )
    )
    blocks = [(c.get("type"), c.get("mimeType")) for c in snap.get("content", [])]
    check(
        "snapshot returns an image block", blocks == [("text", None), ("image", "image/png")], snap
    )
    got = as_json(
        run(
            [
                *base,
                "--method",
                "prompts/get",
                "--prompt-name",
                "greet",
                "--prompt-args",
                "who=Ada",
            ],
            modules.parent,
        )
    )
    text = got.get("messages", [{}])[0].get("content", {}).get("text")
    check("prompts/get", text == "Say hello to Ada", got)


def client_report(name: str, out: str) -> None:
    print(f"{name}:")
    seen = as_json(out.strip().splitlines()[-1] if out.strip() else out)
    if "unparsed" in seen:
        print(f"  (its output: {out[-1500:]!r})")
    tools = dict(seen.get("tools", []))
    check("tools/list shows add with its output schema", tools.get("add") is True, tools)
    check(
        "add returns structuredContent", seen.get("add") == [False, {"total": 5}], seen.get("add")
    )
    check(
        "wipe runs once the user approves (elicitation)",
        seen.get("wipe") == [False, "wiped db"] and seen.get("asked") == 1,
        (seen.get("wipe"), seen.get("asked")),
    )
    shred = seen.get("shred") or [False, ""]
    check(
        "the policy-denied call is an error and does not run",
        shred[0] is True and "shredded" not in str(shred[1]),
        shred,
    )
    check("resources/read", "read me first" in str(seen.get("resource")), seen.get("resource"))
    check("prompts/get", seen.get("prompt") == "Say hello to Ada", seen.get("prompt"))
    snap = seen.get("snapshot") or []
    check(
        "snapshot returns its caption and a PNG image",
        any("image/png" in str(item) for item in snap) and len(snap) == 2,
        snap,
    )


def tasks_report(work: Path, pai_python: str) -> None:
    """#44: pydantic-ai's task client (``use_task=True``) against a gateway whose policy
    sends ``wipe`` to an approver: the call is answered as a task, and the result comes
    once the approver (here, a thread using the queue) has answered."""
    import threading

    import toolwire as tw
    from toolwire.approvals import ApprovalQueue

    print("pydantic-ai MCPToolset, tasks on:")
    queue = work / "approvals.sqlite"
    policy = f'approve = ["wipe"]\n[approvals]\napprovers = ["user:oli"]\nqueue = "{queue}"\n'
    gateway, url = start_gateway(work, policy, "--approve", name="tasks")
    answered: list[str] = []

    def approver() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if queue.exists():
                pending = ApprovalQueue(queue).pending()
                if pending:
                    time.sleep(1.0)  # the client holds a task meanwhile, not its request
                    ApprovalQueue(queue).answer(pending[0].id, approve=True, by=tw.Principal("oli"))
                    answered.append(pending[0].id)
                    return
            time.sleep(0.1)

    thread = threading.Thread(target=approver)
    thread.start()
    try:
        out = run([pai_python, str(HERE / "pai_tasks_client.py"), url], work)
    finally:
        thread.join(70)
        stop(gateway)
    seen = as_json(out.strip().splitlines()[-1] if out.strip() else out)
    check("an approver answered the request the call waited on", len(answered) == 1, answered)
    check(
        "the call, made as a task, ran once approved",
        seen.get("wipe") == [False, "wiped db"],
        seen,
    )


def ts_tasks_report(work: Path, modules: Path) -> None:
    """#44: the TypeScript SDK's 2025-11-25 task client (``callToolStream`` with a
    ``task``) against the gateway's long-running tools: each answered as a task, followed
    to its result; the question one asks reaches the client during the task."""
    print("TypeScript SDK client, 2025-11-25 tasks:")
    gateway, url = start_gateway(work, "", name="ts-tasks", app="tasks_gateway_app")
    try:
        script = modules.parent / "ts_tasks_client.mjs"
        script.write_text((HERE / "ts_tasks_client.mjs").read_text())
        seen = as_json(run(["node", str(script), url], modules.parent).strip())
    finally:
        stop(gateway)
    check("the server says tool calls run as tasks", seen.get("taskCalls") is True, seen)
    support = seen.get("support") or {}
    check(
        "the tool list says the long-running ones may run as tasks, no other",
        {k: v for k, v in support.items() if v} == {"crunch": "optional", "tidy": "optional"},
        support,
    )
    for name, text in (("crunch", "crunched 3"), ("tidy", "tidied attic")):
        got = seen.get(name) or {}
        check(
            f"{name}: a task created, its status heard, its result",
            got.get("seen") == ["taskCreated", "taskStatus", "result"] and got.get("text") == text,
            got,
        )
    check(
        "the question inside the task reached the client",
        seen.get("asked") == ["Tidy attic?"],
        seen,
    )


def main() -> int:
    work, modules, pai_python = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    tasks_report(work, pai_python)
    ts_tasks_report(work, modules)
    gateway, url = start_gateway(work)
    try:
        inspector(modules, url)
        # Beside node_modules: node resolves the SDK from the script's own directory.
        script = modules.parent / "ts_client.mjs"
        script.write_text((HERE / "ts_client.mjs").read_text())
        client_report("TypeScript SDK client", run(["node", str(script), url], modules.parent))
        client_report(
            "pydantic-ai MCPToolset", run([pai_python, str(HERE / "pai_client.py"), url], work)
        )
    finally:
        stop(gateway)
    if FAILED:
        print(f"real clients: {len(FAILED)} check(s) failed; the gateway's log:")
        print((work / "gateway-clients.log").read_text()[-3000:])
        return 1
    print("real clients: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
