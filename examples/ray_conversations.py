"""Stateless agents at scale: Ray actors serve many conversations from shared storage.

Each conversation lives only in storage (a directory of session JSON files standing in
for a database or an object store). Three agent workers, each a Ray actor, take turns
at random: any worker may serve any conversation's next message, because it loads the
session, runs the agent, and saves it back, holding nothing in between. The same
conversations are then run in this one process, and the transcripts are compared: they
are identical, message for message.

Runs on a local Ray cluster started here (about 10 seconds); nothing leaves the machine.
"""

import os
import random
import tempfile
from pathlib import Path

# This local cluster runs this interpreter: Ray's `uv run` propagation (ship the project,
# re-run uv on every worker) is not needed. It is read when Ray is imported.
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")

import ray

from toolwire import Agent, Session, Toolset, tool_fn
from toolwire.providers.test import TestProvider


def make_agent() -> Agent:
    """The same agent everywhere. The tools are made here, in whichever process builds
    the agent: a worker imports toolwire, not this script. No plugins, so the example
    means the same on any machine."""

    @tool_fn
    def get_weather(city: str) -> str:
        """Get the current weather.

        Args:
            city: The city to look up.
        """
        return f"18C and clear in {city}"

    @tool_fn
    def get_time(zone: str) -> str:
        """Get the time in a time zone.

        Args:
            zone: An IANA zone name.
        """
        return f"noon in {zone}"

    return Agent(TestProvider(), Toolset("app", [get_weather, get_time]), plugins=False)


def serve(agent: Agent, store: Path, conversation: str, message: str) -> str:
    """One turn of one conversation: load it, answer, save it. Nothing is kept."""
    path = store / f"{conversation}.json"
    session = Session.from_json(path.read_text()) if path.exists() else Session("Be brief.")
    result = agent.run(session, message)
    path.write_text(session.to_json())
    return result.text


@ray.remote
class AgentWorker:
    def __init__(self, store: str) -> None:
        self.store = Path(store)
        self.agent = make_agent()

    def turn(self, conversation: str, message: str) -> tuple[str, int]:
        return serve(self.agent, self.store, conversation, message), os.getpid()


SCRIPT = {
    f"conv-{i}": [f"What's the weather in 'City{i}'?", "And the time in 'Europe/Oslo'?"]
    for i in range(12)
}


def main() -> None:
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as shared, tempfile.TemporaryDirectory() as alone:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            workers = [AgentWorker.remote(shared) for _ in range(3)]
            served_by: dict[str, set[int]] = {c: set() for c in SCRIPT}
            for step in range(2):  # every conversation's first message, then its second
                pending = []
                for conversation, messages in SCRIPT.items():
                    worker = rng.choice(workers)
                    pending.append((conversation, worker.turn.remote(conversation, messages[step])))
                for conversation, ref in pending:
                    _, pid = ray.get(ref)
                    served_by[conversation].add(pid)
        finally:
            ray.shutdown()

        agent = make_agent()
        for conversation, messages in SCRIPT.items():
            for message in messages:
                serve(agent, Path(alone), conversation, message)

        same = 0
        for conversation in SCRIPT:
            scaled = Session.from_json((Path(shared) / f"{conversation}.json").read_text())
            local = Session.from_json((Path(alone) / f"{conversation}.json").read_text())
            assert _comparable(scaled) == _comparable(local), conversation
            same += 1
        moved = sum(1 for pids in served_by.values() if len(pids) > 1)
        print(f"conversations: {len(SCRIPT)}, each 2 turns, served by 3 Ray actors at random")
        print(f"conversations served by more than one worker process: {moved}")
        print(f"transcripts identical to one process: {same}/{len(SCRIPT)}")
        last = Session.from_json((Path(shared) / "conv-0.json").read_text())
        print(f"conv-0, last answer: {last.last.text}")  # type: ignore[union-attr]


def _comparable(session: Session) -> list[object]:
    """The messages without what differs by nature between runs (ids, times)."""
    data = session.to_dict()
    return data["messages"]


if __name__ == "__main__":
    main()
