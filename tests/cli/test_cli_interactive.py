"""``toolwire chat`` as a person uses it: interactive, under a real pseudo-terminal.

The command runs in a subprocess whose controlling terminal is the pty, so Ctrl-C is the
byte 0x03 typed at it (the terminal sends SIGINT), and colour and folding are what a
terminal gets. The offline provider answers; the tools are the application's own.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import signal
import subprocess
import sys
import termios
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="a POSIX pseudo-terminal")

APP = '''
import asyncio
from pathlib import Path

import toolwire as tw
from pydantic import SecretStr

MARK = Path(__file__).with_name("napping")


async def nap() -> str:
    """Sleep for a minute."""
    MARK.write_text("started")
    await asyncio.sleep(60)
    return "rested"


def write_note(text: str, password: SecretStr) -> str:
    """Write a note down."""
    return "noted: " + text + "\\nline two\\nline three"


# A description over several lines: /tools shows a row a tool all the same.
NAP = "Sleep for a minute.\\nWake up after it."
tools = tw.Toolset(
    "app", [tw.tool_fn(nap, description=NAP), tw.tool_fn(write_note, effect="mutating")]
)
'''

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|\r")


class Terminal:
    """A process on a pty: ``send`` types, ``expect`` reads until a text appears."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, b"\x00\x18\x00\x50\x00\x00\x00\x00")  # 24x80

        def controlling() -> None:
            # A person's terminal delivers Ctrl-C: the test runner's workers may ignore
            # SIGINT, and an ignored signal stays ignored in the child.
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen(
            args,
            cwd=cwd,
            env=env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            preexec_fn=controlling,
            close_fds=True,
        )
        os.close(slave)
        self.seen = ""
        self.raw = ""  # everything the terminal showed, colour codes and all

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def expect(self, text: str, timeout: float = 60.0) -> str:
        """Everything read up to and including ``text`` (colour codes removed)."""
        deadline = time.monotonic() + timeout
        while True:
            plain = ANSI.sub("", self.seen)
            at = plain.find(text)
            if at >= 0:
                self.seen = plain[at + len(text) :]  # what was matched is consumed
                return plain[: at + len(text)]
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"did not see {text!r}; the terminal showed:\n{plain}")
            ready, _, _ = select.select([self.master], [], [], min(left, 0.5))
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # the process ended: the pty is closed
                    chunk = b""
                if not chunk and self.proc.poll() is not None:
                    raise AssertionError(
                        f"the process ended ({self.proc.returncode}) before {text!r}:\n{plain}"
                    )
                self.seen += chunk.decode(errors="replace")
                self.raw += chunk.decode(errors="replace")

    def close(self) -> int:
        try:
            return self.proc.wait(timeout=30)
        finally:
            os.close(self.master)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    here = tmp_path / "work"
    here.mkdir()
    (here / "app.py").write_text(textwrap.dedent(APP))
    return here


def _env(work: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.pop("NO_COLOR", None)
    env.update(
        XDG_CONFIG_HOME=str(work.parent / "config"),
        XDG_DATA_HOME=str(work.parent / "data"),
        XDG_CACHE_HOME=str(work.parent / "cache"),
        TERM="xterm",
        TOOLWIRE_AUTOLOAD_PLUGINS="0",
        **extra,
    )
    return env


def _logs(work: Path, *args: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "toolwire", "logs", *args, "--json"],
        cwd=work,
        env=_env(work),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)


def test_an_interactive_chat_with_tools_approval_cancel_and_save(work: Path) -> None:
    term = Terminal(
        [sys.executable, "-m", "toolwire", "chat", "--app", "app:tools"], work, _env(work)
    )
    try:
        term.expect("Ctrl-D to leave")
        term.expect("> ")
        term.send("hello there\r")
        term.expect("You said: hello there")
        term.expect("> ")

        term.send("/tools\r")
        listed = term.expect("> ")
        rows = [line.strip() for line in listed.splitlines() if line.strip()]
        assert any(r.startswith("nap") and r.endswith("Sleep for a minute.") for r in rows)
        assert not any("Wake up after it" in r for r in rows)  # one row: the first line
        assert "write_note" in listed
        assert "mutating" in listed

        # Ctrl-C cancels the running turn, not the session.
        term.send("take a nap\r")
        deadline = time.monotonic() + 30
        while not (work / "napping").exists():
            assert time.monotonic() < deadline, "the tool never started"
            time.sleep(0.05)
        term.send("\x03")
        term.expect("(cancelled: the conversation is as it was before this prompt)")
        term.expect("> ")

        # A mutating call is asked about at the terminal.
        term.send("write_note please\r")
        term.expect("run `write_note` (mutating)")
        term.send("y\r")
        shown = term.expect("assistant:") + term.expect("> ")
        # On a terminal the result is folded to a line (-v shows it whole).
        (result,) = [line for line in shown.splitlines() if line.startswith("  result:")]
        assert "  result: noted: example (+2 lines)" == result

        # A block between lines of three quotes is one prompt.
        term.send('"""\r')
        term.send("first line\r")
        term.send("second line\r")
        term.send('"""\r')
        term.expect("You said: first line")
        term.expect("> ")

        # Colour on a terminal: the call bold cyan, the result dim.
        assert "\x1b[1;36m> write_note" in term.raw
        assert "\x1b[2m  result:" in term.raw

        term.send("/save saved.json\r")
        term.expect("saved ")
        term.send("/nope\r")
        term.expect("unknown command /nope")
        term.send("/exit\r")
        assert 0 == term.close()
    finally:
        if term.proc.poll() is None:
            term.proc.kill()
            term.close()

    saved = json.loads((work / "saved.json").read_text())
    texts = [m.get("text") for m in saved["messages"] if m["role"] == "user"]
    # The cancelled prompt left nothing behind.
    assert ["hello there", "write_note please", "first line\nsecond line"] == texts

    responses = _logs(work)["responses"]
    logged = [r["prompt"] for r in _logs(work, "-n", "10")["responses"]]
    assert ["hello there", "write_note please", "first line\nsecond line"] == logged
    (note,) = next(r for r in responses if r["prompt"] == "write_note please")["tool_calls"]
    assert ("run", "allow: approved at the terminal") == (note["decision"], note["approval"])
    # The secret argument is never stored, in the call record or the saved conversation.
    args = json.loads(note["arguments"])
    assert "[REDACTED]" == args["password"]
    assert (work.parent / "data" / "toolwire" / "history").exists()


def test_ctrl_d_leaves_and_colour_follows_no_color(work: Path) -> None:
    term = Terminal(
        [sys.executable, "-m", "toolwire", "chat", "--app", "app:tools"],
        work,
        _env(work, NO_COLOR="1"),
    )
    try:
        term.expect("Ctrl-D to leave")
        term.expect("> ")
        term.send("hi\r")
        term.expect("You said: hi")
        term.expect("> ")
        term.send("\x04")
        assert 0 == term.close()
    finally:
        if term.proc.poll() is None:
            term.proc.kill()
            term.close()
    assert not re.search(r"\x1b\[[0-9;]*m", term.raw)  # no colour (the spinner still erases)
