"""Shell completion: ``toolwire completion bash|zsh|fish`` prints a script; the script asks
``toolwire __complete INDEX WORD...`` for the candidates of the word at INDEX (the words
after ``toolwire``), which come from the parser itself (commands, options) and from what
is installed (providers, tool names, the models of the profiles).

Asking never starts anything: tool names come from the assembled toolset, and
toolwire-mcp lists a configured server's tools from its cache without starting it.
A failure prints nothing (the shell then completes file names).
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
from collections.abc import Callable, Iterable, Sequence

from toolwire.cli.parser import _subparsers

__all__ = ["complete", "script"]

_BASH = """\
# toolwire completion for bash: `source <(toolwire completion bash)` or add it to ~/.bashrc
_toolwire_complete() {
    local IFS=$'\\n'
    COMPREPLY=($(toolwire __complete "$((COMP_CWORD - 1))" "${COMP_WORDS[@]:1}" 2>/dev/null))
}
complete -o default -F _toolwire_complete toolwire
"""

_ZSH = """\
#compdef toolwire
# toolwire completion for zsh: save as _toolwire in a directory of $fpath
_toolwire() {
    local -a candidates
    candidates=("${(@f)$(toolwire __complete $((CURRENT - 2)) "${(@)words[2,-1]}" 2>/dev/null)}")
    if (( ${#candidates} )) && [[ -n "${candidates[1]}" ]]; then
        compadd -a candidates
    else
        _files
    fi
}
if [[ "${zsh_eval_context[-1]}" == loadautofunc ]]; then
    _toolwire "$@"
else
    compdef _toolwire toolwire
fi
"""

_FISH = """\
# toolwire completion for fish: save as ~/.config/fish/completions/toolwire.fish
function __toolwire_complete
    set -l words (commandline -opc)
    set -e words[1]
    toolwire __complete (count $words) $words (commandline -ct) 2>/dev/null
end
complete -c toolwire -f -a '(__toolwire_complete)'
"""

_SCRIPTS = {"bash": _BASH, "zsh": _ZSH, "fish": _FISH}


def script(shell: str) -> str:
    return _SCRIPTS[shell]


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {o: a for a in parser._actions for o in a.option_strings}


def _providers() -> list[str]:
    from toolwire._plugins import get_host

    return sorted(get_host().providers())


def _tools() -> list[str]:
    from toolwire._plugins import get_host

    return [t.name for t in get_host().assemble().tools()]


def _models() -> list[str]:
    from toolwire import profiles

    names: set[str] = set()
    for p in profiles.profiles():
        for pattern in p.match:
            # A model name, or a family's (`gpt-4.1*` offers gpt-4.1): never a fragment
            # of a glob (`o3-*` offered `o3-`, `o3:*` offered `o3:`).
            stem = pattern.strip("*")
            if not stem or any(c in stem for c in "*?[") or stem[-1] in "-:.@_/":
                continue
            if _DATED.search(stem):  # the start of a dated snapshot's name, not a name
                continue
            names.add(stem)
    from toolwire.cli.stored import read_aliases

    with contextlib.suppress(Exception):  # a completion never fails on a broken file
        names.update(read_aliases())
    return sorted(names)


def _keys() -> list[str]:
    from toolwire.cli.stored import read_keys

    with contextlib.suppress(Exception):
        return sorted(read_keys())
    return []


_DATED = re.compile(r"-\d{4}$")


#: Option -> where its values come from.
_VALUES: dict[str, Callable[[], Iterable[str]]] = {
    "--provider": _providers,
    "--key": _keys,
    "--model": _models,
}


def candidates(words: Sequence[str], index: int) -> list[str]:
    """The completions of ``words[index]`` (the words after ``toolwire``)."""
    from toolwire.cli.extend import plugin_commands
    from toolwire.cli.parser import _parser, add_commands

    words = list(words)
    current = words[index] if 0 <= index < len(words) else ""
    before = words[:index] if index >= 0 else words
    parser = _parser()
    added = plugin_commands(_subparsers(parser))
    add_commands(parser, added)
    values = dict(_VALUES)
    positional: list[str] = []
    skip = False
    for word in before:
        if skip:
            skip = False
            continue
        opts = _options(parser)
        if word in opts:
            skip = opts[word].nargs != 0
            continue
        sub = _subparsers(parser)
        if word in sub:
            if parser.prog == "toolwire" and word in added:  # where its values come from
                values.update(added[word].values)
            parser = sub[word]
            positional = []
            continue
        if not word.startswith("-"):
            positional.append(word)
    if before:
        last = before[-1]
        action = _options(parser).get(last)
        if action is not None and action.nargs != 0:
            if last in values:
                found = list(values[last]())
            elif action.choices:
                found = [str(c) for c in action.choices]
            else:
                return []  # a path or free text: the shell's own completion
            return [c for c in found if c.startswith(current)]
    if current.startswith("-"):
        return sorted(o for o in _options(parser) if o.startswith(current) and o.startswith("--"))
    sub = _subparsers(parser)
    if sub and not positional:
        return sorted(c for c in sub if c.startswith(current) and not c.startswith("_"))
    if parser.prog.endswith(" call") and not positional:
        return [t for t in _tools() if t.startswith(current)]
    choices = [a.choices for a in parser._actions if not a.option_strings and a.choices]
    if choices and not positional:
        return sorted(str(c) for c in choices[0] if str(c).startswith(current))
    return []


def complete(argv: Sequence[str]) -> int:
    """``toolwire __complete INDEX WORD...``: one candidate per line; 0 always."""
    try:
        index = int(argv[0])
        found = candidates(argv[1:], index)
    except Exception:  # completion never fails loudly: the shell falls back to files
        return 0
    sys.stdout.write("".join(f"{c}\n" for c in found))
    return 0
