"""List a real MCP server's tools through toolwire-mcp and call every one of them.

``python call_every_tool.py NAME [options] -- COMMAND ARGS...``: the server is started over stdio
as an application's config would start it; every tool is called through the executor
with arguments made from its input schema (``--args TOOL=JSON`` gives a tool its own).
Prints one line per tool; exits non-zero when a call fails for a reason on toolwire's
side (a transport error, a result the client refuses), not when the server answers a
made-up argument with a tool error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import toolwire as tw
from toolwire.providers.test import TestProvider
from toolwire_mcp import (
    ServerSpec,
    close_all,
    enable_sampling,
    mcp_server,
    mcp_toolset,
    set_elicitation_handler,
    set_roots,
)

sys.path.insert(0, __file__.rsplit("/", 2)[0] + "/conformance")
from client import example

#: Texts that mean toolwire, not the server, failed the call.
OURS = ("closed the connection", "did not answer", "failed during the call", "could not run")


def main() -> int:
    argv = sys.argv[1:]
    cut = argv.index("--")
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("--args", action="append", default=[], metavar="TOOL=JSON")
    ap.add_argument("--skip", action="append", default=[], metavar="TOOL")
    ap.add_argument(
        "--value",
        action="append",
        default=[],
        metavar="FIELD=JSON",
        help="the value of an argument of that name, in every tool that has one",
    )
    ap.add_argument("--idle", type=float, default=0.0, help="seconds idle before the calls")
    ap.add_argument(
        "--expect-media",
        action="append",
        default=[],
        metavar="TOOL=TYPE",
        help="the tool's result must carry a media part of this type (an image the model sees)",
    )
    ap.add_argument(
        "--expect-text",
        action="append",
        default=[],
        metavar="TOOL=START",
        help="the model must read the server's text, starting so, and the application get "
        "the structured content (not the structured content as escaped JSON text)",
    )
    ap.add_argument(
        "--expect-start",
        action="append",
        default=[],
        metavar="TOOL=START",
        help="the tool must answer without error, its text starting so (a task's result)",
    )
    opts = ap.parse_args(argv[:cut])
    command = argv[cut + 1 :]
    given = dict(a.split("=", 1) for a in opts.args)
    expect_media = dict(a.split("=", 1) for a in opts.expect_media)
    expect_text = dict(a.split("=", 1) for a in opts.expect_text)
    expect_start = dict(a.split("=", 1) for a in opts.expect_start)
    values = {k: json.loads(v) for k, v in (a.split("=", 1) for a in opts.value)}
    set_elicitation_handler(lambda request: True)
    # Sampling answered offline, under the (absent) policy; roots: the working directory.
    enable_sampling(TestProvider(), max_tokens=1000, plugins=tw.PluginHost(autoload=False))
    set_roots([os.getcwd()])
    if len(command) == 1 and command[0].startswith("http://"):  # Streamable HTTP
        spec = ServerSpec(opts.name, url=command[0], timeout=60)
    else:
        spec = ServerSpec(opts.name, command=command[0], args=tuple(command[1:]), timeout=60)
    tools = mcp_toolset(opts.name, spec, annotations="trust")
    print(f"{opts.name}: {len(tools.tools())} tools")
    if tools.get("read_resource") is not None and "read_resource" not in given:
        # The model reads a resource the server lists: the first one.
        listed = mcp_server(tools).resources()
        print(f"{opts.name}: {len(listed)} resources")
        if listed:
            given["read_resource"] = json.dumps({"uri": str(listed[0].uri)})
    if opts.idle:
        time.sleep(opts.idle)  # a gap longer than any keep-alive
    executor = tw.Executor(tools=tools, plugins=False, approval=lambda request: tw.Allow())
    failed = 0
    for i, tool in enumerate(tools.tools()):
        if tool.name in opts.skip:
            print(f"  {tool.name}: skipped")
            continue
        made = example(tool.input_schema) or {}
        if isinstance(made, dict):
            made.update({k: v for k, v in values.items() if k in made})
        arguments = given.get(tool.name) or json.dumps(made)
        result = executor.execute(tw.ToolCall(f"c{i}", tool.name, arguments))
        ours = result.is_error and any(text in result.content for text in OURS)
        kinds = [getattr(p, "media_type", None) for p in result.media]
        wanted = expect_media.get(tool.name)
        missing = wanted is not None and wanted not in kinds
        start = expect_text.get(tool.name)
        unread = start is not None and (
            not result.content.startswith(start) or not isinstance(result.structured, dict)
        )
        begins = expect_start.get(tool.name)
        if begins is not None and (result.is_error or not result.content.startswith(begins)):
            unread = True
            start = begins
        failed += ours or missing or unread
        state = "FAILED" if ours else ("tool error" if result.is_error else "ok")
        if missing:
            state = f"FAILED (no {wanted} part)"
        if unread:
            state = f"FAILED (not the server's text starting {start!r} and a structured value)"
        media = f" + media {kinds}" if kinds else ""
        media += " + structured" if result.structured is not None else ""
        print(f"  {tool.name}: {state}: {result.content[:120]!r}{media}")
    executor.close()
    close_all()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
