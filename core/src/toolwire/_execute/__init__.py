"""The executor: checks, approval, interceptors, timeout, retry and parallelism for tool calls.

The executor is something user code hands calls (or a whole ToolRoundPlan) to;
it never runs anything on its own. Per call, in this order:

    lookup -> capability allow-list -> availability -> schema validation
    -> custom validation -> approval -> [retry: interceptors -> timeout -> tool]
    -> output validation -> on_result -> ToolResult

Every failure becomes an error result (``is_error=True``): refusals where the
tool was not run (unknown tool, sandbox violation, unavailable, invalid
arguments, failed validation, approval denied) carry the standard rejection
prefix, so ``rejection_reason(result)`` reads the reason back; failures of the
tool itself (its exception, a timeout, output of the wrong type) are plain
error text. ``dispatch`` raises ToolExecutionError instead.

Everything that depends only on the tool (is it async, its timeout, its retry
hint, its sandbox verdict, its output validator) is decided once per tool and
cached on the executor.

Modules, bottom up: ``approval`` (decisions, the gate, fingerprints), ``interceptors``
(the request, the protocol, the built-in interceptors), ``attempts`` (transient
failures, timeouts), ``jobs`` (per-tool and per-call state), ``paused`` (RoundExecution
and the paused-round codec), ``executor`` (the Executor).
"""
