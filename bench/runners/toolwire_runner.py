"""toolwire's runner: measured through the path an application (and the agent loop) uses.

* S1: ``tool_fn`` per function (docstring parsed, schema cleaned), a ``Toolset``, a resolved
  turn, and the OpenAI Chat Completions wire dicts of the ``toolwire-openai`` adapter as a
  request takes them (``_wire_tools``, what ``build_body`` sends; compiled and cached per
  tool); re-render reuses the tools.
* S2: the assistant message's calls -> ``ToolCall`` records -> ``decode_reply`` (lookup,
  ``validate_json`` straight on the argument text, typed call wrappers, the round).
* S3: S2, then each sync tool run inline and ``call.complete(output)``, then ``round.commit``
  (commit validation, assistant order, the tool-results message).
* hooks: n decision hooks, each a real pluggy plugin (a module object with a
  ``@hookimpl toolwire_tool_decision``) registered with ``kind="policy"`` on a fresh
  ``PluginHost(autoload=False)``; the round is S3 with ``round.apply_hooks(*host.hook_sets())``
  before the tools run, then ``plan.commit(results)``.
* discovery: a fresh interpreter that has imported toolwire; timed: ``toolwire.get_host()``
  (imports the plugin machinery, reads entry points, loads policies) +
  ``host.assemble(app)`` (imports every tool pack, calls its ``toolwire_register_toolsets``)
  + ``.tools()`` (the flattened toolset).
* streaming: the adapter's own stream state fed by the core ``SSEDecoder``: the loop of
  ``provider.stream()`` minus the HTTP transport (no adapter exposes a bytes -> reply
  function): ``SSEDecoder.feed(read)`` -> ``provider._feed_safely(state, event)`` (Chat
  Completions, Responses) / ``provider._feed(state, event)`` (Anthropic, Gemini) ->
  ``provider._finish_stream(state, turn)`` / ``state.finish()`` / ``provider._completed``.
* executor: ``await Executor().aexecute_all(calls)`` over the 8 decoded calls of async twins
  of the 8 fixture tools (default options: max_concurrency 8, output validation on).
"""

from __future__ import annotations

import importlib
import importlib.util
import types
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from bench import _sse
from bench.runners._base import Runner

#: Stream format -> (module, adapter class); each is made with api_key= only.
_STREAM_PROVIDERS = {
    "openai-chat": ("toolwire_openai", "OpenAIChatProvider"),
    "openai-responses": ("toolwire_openai", "OpenAIResponsesProvider"),
    "anthropic": ("toolwire_anthropic", "AnthropicProvider"),
    "gemini": ("toolwire_gemini", "GeminiProvider"),
}

_APP_TOOL = """
def app_lookup(query: str) -> str:
    \"\"\"Look something up.

    Args:
        query: what to look up.
    \"\"\"
    return query
"""


def _decision_plugin(i: int, hookimpl: Any, reject: Any) -> Any:
    """A plugin object as an entry point gives it: a module with one decision hookimpl."""
    mod = types.ModuleType(f"bench_policy_{i}")
    blocked = f"never_called_{i}"

    def toolwire_tool_decision(call: Any, context: Any) -> Any:
        # An allow-list style policy: look at the call, usually have no opinion.
        if call.name == blocked:
            return reject(f"{blocked} is not allowed")
        return None

    mod.toolwire_tool_decision = hookimpl(toolwire_tool_decision)  # type: ignore[attr-defined]
    return mod


class ToolwireRunner(Runner):
    name = "toolwire"
    module = "toolwire"
    distribution = "toolwire"
    import_statement = "import toolwire"
    # import toolwire is lazy (as pydantic's own import is); this is what the S2/S3 path uses.
    working_set_statement = (
        "from toolwire import Session, ToolCall, Toolset, resolve_turn, tool_fn; "
        "from toolwire.adapters import AssistantReply, decode_reply"
    )
    paths: ClassVar[dict[str, str]] = {
        "S1": "tool_fn(fn) per function + Toolset + resolve_turn + "
        "OpenAIChatProvider._wire_tools(turn) (the cached wire dicts build_body() sends; "
        "render_tools(turn), a deep copy of them, where _wire_tools does not exist; neutral "
        "spec wrapped when toolwire-openai is not installed)",
        "S2": "ToolCall per message call + decode_reply(session, turn, AssistantReply)",
        "S3": "S2 + call.complete(call.run()) per call + round.commit(results)",
        "S4": import_statement,
        "hooks": "PluginHost(autoload=False).register(module with a toolwire_tool_decision "
        "hookimpl, kind='policy') x n; S3 with round.apply_hooks(*host.hook_sets()), "
        "plan.pending run inline, plan.commit(results)",
        "discovery": "fresh process after `import toolwire`: get_host() + host.assemble(app) "
        "+ .tools(); each fake dist is a module with a toolwire_register_toolsets hookimpl "
        "registering a one-tool Toolset (tool_fn at import)",
        "streaming": "SSEDecoder.feed(512-byte reads) -> adapter stream state through "
        "provider._feed_safely/_feed -> _finish_stream/finish/_completed "
        "(provider.stream() minus HTTP)",
        "executor": "await Executor().aexecute_all(8 TypedCalls of async twins of the tools)",
    }

    def setup(self) -> None:
        super().setup()
        import toolwire

        self.tw = toolwire
        # Plugin discovery is part of starting the library, as imports are: resolving a
        # turn reads the default host's policies, so it is made here, untimed (the
        # discovery rows measure it on their own).
        toolwire.get_host()
        self._provider: Any = None
        if importlib.util.find_spec("toolwire_openai") is not None:
            try:
                from toolwire_openai import OpenAIChatProvider

                self._provider = OpenAIChatProvider(api_key="bench-not-used")
            except Exception:  # the adapter is optional for this runner
                self._provider = None

    def build(self, functions: Sequence[Callable[..., Any]]) -> Any:
        tw = self.tw
        return tw.Toolset("bench", [tw.tool_fn(fn) for fn in functions])

    def render(self, built: Any) -> list[dict[str, Any]]:
        turn = self.tw.resolve_turn(built)
        if self._provider is not None:
            # What every request does: build_body() takes the adapter's cached wire dicts
            # (_wire_tools) and serialises them. The public render_tools() returns a deep
            # copy of the same dicts for callers to inspect or edit (see bench/README.md).
            wire = getattr(self._provider, "_wire_tools", None)
            if wire is not None:
                return list(wire(turn))
            return list(self._provider.render_tools(turn))
        return [{"type": "function", "function": t.definition.to_spec()} for t in turn.tools]

    def prepare(self, built: Any) -> Any:
        return self.tw.resolve_turn(built)

    def _reply(self, message: dict[str, Any]) -> Any:
        tw = self.tw
        return tw.adapters.AssistantReply(
            message.get("content") or "",
            tuple(
                tw.ToolCall(tc["id"], tc["function"]["name"], tc["function"]["arguments"])
                for tc in message["tool_calls"]
            ),
            "tool_calls",
        )

    def decode(self, prepared: Any, message: dict[str, Any]) -> list[Any]:
        tw = self.tw
        outcome = tw.adapters.decode_reply(tw.Session(id="bench"), prepared, self._reply(message))
        return list(outcome.round.calls)

    def round(self, prepared: Any, message: dict[str, Any]) -> list[Any]:
        tw = self.tw
        session = tw.Session(id="bench")
        rnd = tw.adapters.decode_reply(session, prepared, self._reply(message)).round
        rnd.commit([c.complete(c.tool.call(c.input)) for c in rnd.calls])
        last = session.last
        return list(last.results)

    # -- bounds: what the returned objects cost alone ---------------------------------------

    def _objects(self, prepared: Any, message: dict[str, Any]) -> Any:
        """The floor's validation and exactly the objects S2's path returns and keeps (the
        ToolCall records and AssistantReply an adapter makes, the Session, a TypedCall per
        call made as decode_calls makes it, the AssistantMessage, the ToolRound and
        NeedsTools), with none of the work between them: no duplicate ids, no offered-tool
        or surrogate checks, no requirement, no policy guard."""
        tw = self.tw
        session = tw.Session(id="bench")
        reply = self._reply(message)
        offered = prepared.offered
        new = object.__new__
        typed_call_class = tw.TypedCall
        typed = []
        for call in reply.tool_calls:
            tool = offered[call.name]
            typed_call = new(typed_call_class)
            typed_call._call = call
            typed_call._tool = tool
            typed_call._input = tool._validate(call.arguments)
            typed_call._edited = False
            typed_call._guard = None
            typed.append(typed_call)
        said = tw.AssistantMessage(reply.text, reply.tool_calls, {}, reply.model, reply.usage)
        return tw.NeedsTools(tw.ToolRound(session, prepared, said, tuple(typed), (), reply))

    def decode_objects(self, prepared: Any, message: dict[str, Any]) -> list[Any]:
        """S2's bound, not a path (see ``_objects``): what any design that returns these
        objects pays, whatever it checks."""
        return list(self._objects(prepared, message).round.calls)

    def round_objects(self, prepared: Any, message: dict[str, Any]) -> list[Any]:
        """S3's bound, not a path: ``_objects``, each tool run as the floor runs it, a
        ToolResult per call, and the assistant message and the results message appended to
        the session, with none of the commit's checks."""
        tw = self.tw
        round_ = self._objects(prepared, message).round
        new = tuple.__new__
        result_class = tw.ToolResult
        results = []
        for c in round_.calls:
            cid, name, arguments = c._call
            out = c._tool.fn(**c._input.__dict__)
            results.append(new(result_class, (cid, name, arguments, out, False, (), None)))
        messages = round_.session._messages
        messages.extend((round_.message, tw.ToolResultsMessage(tuple(results))))
        return list(messages[-1].results)

    # -- hooks ----------------------------------------------------------------------------

    def setup_hooks(self, built: Any, n_hooks: int) -> Any:
        from toolwire import PluginHost, Reject
        from toolwire.hookspecs import hookimpl

        host = PluginHost(autoload=False)
        for i in range(n_hooks):
            host.register(_decision_plugin(i, hookimpl, Reject), f"bench-policy-{i}", kind="policy")
        sets = host.hook_sets()
        found = sum(len(s._decision) for s in sets)
        if found != n_hooks:
            raise AssertionError(f"{n_hooks} plugins registered, {found} decision hooks")
        return self.tw.resolve_turn(built), sets

    def round_with_hooks(self, prepared: Any, message: dict[str, Any]) -> list[Any]:
        tw = self.tw
        turn, sets = prepared
        session = tw.Session(id="bench")
        plan = tw.adapters.decode_reply(session, turn, self._reply(message)).round.apply_hooks(
            *sets
        )
        plan.commit([c.complete(c.tool.call(c.input)) for c in plan.pending])
        return list(session.last.results)

    # -- discovery ------------------------------------------------------------------------

    def discovery_snippet(self, n_plugins: int) -> tuple[str, str, str]:
        setup = (
            "import toolwire\n"
            + _APP_TOOL
            + "app = toolwire.Toolset('app', [toolwire.tool_fn(app_lookup)])\n"
        )
        timed = "host = toolwire.get_host()\ntools = host.assemble(app).tools()\n"
        check = (
            "names = {t.name for t in tools}\n"
            f"missing = [i for i in range({n_plugins}) if f'fake_tool_{{i:03d}}' not in names]\n"
            "assert not missing, (missing, host.failures)\n"
            "assert 'app_lookup' in names, names\n"
        )
        return setup, timed, check

    # -- streaming ------------------------------------------------------------------------

    def setup_stream(self, built: Any, message: dict[str, Any]) -> dict[str, Any]:
        """Per wire format: (format, reads, adapter, turn), or why it cannot run (a str)."""
        turn = self.tw.resolve_turn(built)
        out: dict[str, Any] = {}
        for fmt, (module, cls_name) in _STREAM_PROVIDERS.items():
            try:
                provider = getattr(importlib.import_module(module), cls_name)(
                    api_key="bench-not-used"
                )
            except Exception as exc:  # adapters are optional
                out[fmt] = f"{module}.{cls_name} unavailable: {type(exc).__name__}: {exc}"
                continue
            out[fmt] = (fmt, _sse.chunks(_sse.stream_bytes(fmt, message)), provider, turn)
        return out

    def stream_assemble(self, prepared: Any) -> list[tuple[str, str, str]]:
        from toolwire._http import SSEDecoder

        fmt, reads, provider, turn = prepared
        decoder = SSEDecoder()
        events: list[Any] = []  # what a consumer of provider.stream() receives
        gemini = fmt == "gemini"
        if gemini:
            state = provider._builder(turn, stream=True)
            feed = provider._feed
        else:
            state = provider._stream_state()
            feed = provider._feed_safely if fmt.startswith("openai") else provider._feed
        for read in reads:
            for event in decoder.feed(read):
                if gemini or not state.done:
                    events.extend(feed(state, event))
        decoder.finish()
        if gemini:
            reply = provider._completed(state).reply
        elif fmt == "anthropic":
            reply = state.finish()
        else:
            reply = provider._finish_stream(state, turn).reply
        return [(c.id, c.name, c.arguments) for c in reply.tool_calls]

    # -- executor -------------------------------------------------------------------------

    def setup_parallel(self, built: Any, message: dict[str, Any]) -> Any:
        tw = self.tw
        from toolwire import Executor

        fns = {t.name: t.fn for t in built.tools()}
        names = [tc["function"]["name"] for tc in message["tool_calls"]]
        toolset = tw.Toolset("bench-async", [tw.tool_fn(_sse.async_twin(fns[n])) for n in names])
        turn = tw.resolve_turn(toolset)
        calls = tw.adapters.decode_reply(
            tw.Session(id="bench"), turn, self._reply(message)
        ).round.calls
        if len(calls) != len(names) or not all(c.tool.is_async for c in calls):
            raise AssertionError("executor setup: expected one async typed call per tool call")
        return Executor(), calls

    async def execute_parallel(self, prepared: Any) -> list[Any]:
        executor, calls = prepared
        return await executor.aexecute_all(calls)

    def normalise_input(self, item: Any, fn: Callable[..., Any]) -> dict[str, Any]:
        return dict(item.input.__dict__)

    def result_parts(self, item: Any) -> tuple[str, str]:
        return item.call_id, item.content
