#!/usr/bin/env python3
"""A proem client with nothing but the standard library.

    python3 proem_client.py http://127.0.0.1:7878 AGENT [--now RFC3339] [--channel C] [--format F] ...

Prints exactly what `proem build AGENT ...` prints for the same turn.
Every `proem build` flag maps to a field of the request (--chat-kind -> chat_kind).
On an error it prints the problem's detail (RFC 9457) and exits 1.
"""
import json
import os
import sys
import urllib.error
import urllib.request


def build(base_url, agent, turn, token=None):
    """POSTs one turn and returns the response body as text."""
    request = urllib.request.Request(
        f"{base_url}/v1/agents/{urllib.request.quote(agent, safe='')}/build",
        data=json.dumps(turn).encode(),
        headers={"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read().decode("utf-8")


def main(argv):
    if len(argv) < 3 or len(argv) % 2 == 0:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    base_url, agent = argv[1].rstrip("/"), argv[2]
    turn = {}
    for flag, value in zip(argv[3::2], argv[4::2]):
        key = flag.lstrip("-").replace("-", "_")
        turn[key] = int(value) if key == "budget" else value
    try:
        sys.stdout.write(build(base_url, agent, turn, os.environ.get("PROEM_TOKEN")))
    except urllib.error.HTTPError as e:
        problem = json.loads(e.read() or b"{}")
        print(f"proem: {e.code}: {problem.get('detail', e.reason)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
