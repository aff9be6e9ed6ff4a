"""toolwire's benchmark harness: the pure-pydantic floor, the peers, and (later) toolwire.

Run it from the repository root with ``uv run python -m bench.run --quick``; see
``bench/README.md``.
"""
