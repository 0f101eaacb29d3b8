"""Opens N idle connections to HOST:PORT, holds them, and reports what the
server did with them: how many it answered 503 at once, how many it left
open, how many it refused.
    idle_flood.py HOST PORT N HOLD_SECONDS
prints "answered_503 A open O refused R" """
import socket
import sys
import time

host, port, n, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
conns, refused = [], 0
for _ in range(n):
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    s.settimeout(5)
    try:
        s.connect((host, port))
        conns.append(s)
    except OSError:
        refused += 1
        s.close()
time.sleep(hold)
answered, still_open = 0, 0
for s in conns:
    s.setblocking(False)
    try:
        data = s.recv(4096)
        if data.startswith(b"HTTP/1.1 503"):
            answered += 1
    except BlockingIOError:
        still_open += 1
    except OSError:
        pass
    s.close()
print(f"answered_503 {answered} open {still_open} refused {refused}")
