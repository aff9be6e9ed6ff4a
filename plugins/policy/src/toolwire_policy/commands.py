"""The command toolwire-policy adds to ``toolwire`` (entry point ``toolwire.commands:
policy``): ``toolwire policy ...``, the same commands as the ``toolwire-policy`` script.

Imported whenever the command line lists its commands: the policy machinery is imported
only when one runs.
"""

from __future__ import annotations

import argparse

from toolwire import hookimpl
from toolwire.cli.extend import Command, CommandContext
from toolwire.hookspecs import RegisterCommand

__all__ = ["toolwire_cli_commands"]


@hookimpl
def toolwire_cli_commands(register: RegisterCommand) -> None:
    from toolwire_policy._cli import ABOUT, arguments

    register(Command("policy", ABOUT, arguments=arguments, run=_run))


def _run(args: argparse.Namespace, context: CommandContext) -> int:
    from toolwire_policy.__main__ import run

    return run(args, prog="toolwire policy")
