"""Reads only the INPUT fields of the session cases of vectors/manifest.json.

The clean-room rule: the judge is written from spec/framing_v6.adoc alone, so this
loader hands on the two byte streams and the case id, and nothing the reference
computed (no `expected`, no switch offsets, no `server_responds_after`).
"""
import json
import os

VECTORS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def session_inputs(manifest=os.path.join(VECTORS, "manifest.json")):
    """Yields (id, client_bytes, server_bytes) for every session case."""
    with open(manifest) as f:
        cases = json.load(f)["cases"]
    for case in cases:
        if case.get("kind") != "session":
            continue
        with open(os.path.join(VECTORS, case["client_stream"]["file"]), "rb") as f:
            client = f.read()
        with open(os.path.join(VECTORS, case["server_stream"]["file"]), "rb") as f:
            server = f.read()
        yield case["id"], client, server
