"""Wait for something to listen on 127.0.0.1:PORT: ``wait_port.py PORT WHAT`` exits 0 once
it does, 1 after 60 s (saying that WHAT did not start)."""

import socket
import sys
import time

port, what = int(sys.argv[1]), " ".join(sys.argv[2:]) or "the server"
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.2)
sys.exit(f"{what} did not start within 60 s")
