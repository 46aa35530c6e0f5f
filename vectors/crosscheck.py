#!/usr/bin/env python3
"""Cross-check the golden vectors against real driver code (the peers in peers/).

For every `kind: "frames"` case with the CRC32 payload checksum (the only one the drivers
implement), each peer decodes the case's bytes fed whole and in every chunking of the manifest
that is a single chunk size (the peers take one `chunk_size`, not a repeating pattern):

* a valid case must come back `ok` with the manifest's frames (self-contained flag, content
  length and bytes) and envelopes (version, flags, stream, opcode, length, body);
* an invalid case must come back with `ok: false`.

Valid uncompressed single-frame cases are also encoded by each peer and compared with our bytes;
LZ4 ones are encoded by the peer and decoded by the reference (LZ4 output is not canonical).

Every result that differs is a peer deviation. vectors/peer-deviations.json lists the known
ones as {peer: {key: reason}}, where key is `case-id` when the case deviates in every chunking
tried, `case-id@chunking` (`@whole`, `@1`, `@7`) when only in some, and `case-id@encode` for
the encode check. The script fails on a deviation not in the list, on a listed one that no
longer occurs, and on a harness failure. Session cases are skipped: the peers decode frame
streams, not handshakes.

Usage: python3 vectors/crosscheck.py [--suggest] [--verbose]
  --suggest   also print the deviations seen as a JSON object for peer-deviations.json
              (known reasons kept, new ones filled with a generated reason to edit)
  --verbose   also print every peer result (ok, or the peer's error)
Environment: CQLFRAME_BIN (default target/release/cqlframe; built if missing).
The last line is `crosscheck: N passed, M failed`.
"""

import hashlib
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from checklib import cqlframe_binary, first_difference

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "vectors"
MANIFEST = VECTORS / "manifest.json"
DEVIATIONS = VECTORS / "peer-deviations.json"
PEERS = ["python", "java"]
PEER_TIMEOUT = 600  # seconds for one batch
ENVELOPE_FIELDS = ["version", "flags", "stream", "opcode", "length"]


# ---------------------------------------------------------------- manifest helpers

def blob_matches(blob, data):
    """Whether `data` is the manifest blob ({length, hex} or {length, sha256})."""
    if blob["length"] != len(data):
        return False
    if "hex" in blob:
        return blob["hex"] == data.hex()
    return blob["sha256"] == hashlib.sha256(data).hexdigest()


def blob_bytes(blob):
    """The bytes of a blob when the manifest gives them (hex), else None."""
    return bytes.fromhex(blob["hex"]) if "hex" in blob else None


def chunkings(manifest):
    """(name, chunk_size) pairs the peers can be fed with, and the patterns they cannot."""
    usable, skipped = [("whole", None)], []
    for pattern in manifest["default_chunkings"]:
        if len(pattern) == 1:
            usable.append((str(pattern[0]), pattern[0]))
        else:
            skipped.append(pattern)
    return usable, skipped


def rule_of(case):
    err = case["expected"]["error"]
    return err["rule"] if err else None


# ---------------------------------------------------------------- running the peers

def run_peer(peer, ops, out):
    """Runs one batch through peers/<peer>/run.sh; stores (results|None, problem|None, seconds)."""
    start = time.monotonic()
    try:
        proc = subprocess.run([str(ROOT / "peers" / peer / "run.sh")], input=json.dumps(ops),
                              capture_output=True, text=True, timeout=PEER_TIMEOUT, cwd=ROOT)
    except (OSError, subprocess.TimeoutExpired) as e:
        out[peer] = (None, "could not run: %s" % e, time.monotonic() - start)
        return
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        out[peer] = (None, "exit %d: %s" % (proc.returncode, proc.stderr.strip()[-2000:]), seconds)
        return
    try:
        results = json.loads(proc.stdout)
    except ValueError as e:
        out[peer] = (None, "output is not JSON (%s): %s" % (e, proc.stdout[:300]), seconds)
        return
    if not isinstance(results, list) or len(results) != len(ops):
        out[peer] = (None, "expected a list of %d results" % len(ops), seconds)
        return
    out[peer] = (results, None, seconds)


# Error texts by which the harnesses refuse an operation itself (its fields), not the bytes.
HARNESS_ERRORS = ("unknown op", "unknown layer", "unknown format", "chunk_size must be",
                  "KeyError", "missing or non-", "bad value for ")


def harness_problem(op, res):
    """A reason when `res` is not a well-formed answer to `op` (a harness failure), else None."""
    if not isinstance(res, dict) or res.get("id") != op["id"]:
        return "result id mismatch or not an object: %r" % (str(res)[:200],)
    if not isinstance(res.get("ok"), bool):
        return "result has no boolean ok"
    if op["op"] == "encode":
        if res["ok"] and not isinstance(res.get("output_hex"), str):
            return "encode result without output_hex"
    elif res["ok"] and not (isinstance(res.get("frames"), list) and isinstance(res.get("envelopes"), list)):
        return "decode result without frames/envelopes"
    if not res["ok"]:
        err = str(res.get("error", ""))
        if not err:
            return "error result without error text"
        if any(h in err for h in HARNESS_ERRORS):
            return "harness rejected the operation: %s" % err[:200]
    return None


# ---------------------------------------------------------------- comparisons

def compare_decode(case, res):
    """Differences between a peer's decode of a valid case and the manifest (first few)."""
    exp = case["expected"]
    diffs = []
    frames, envelopes = res["frames"], res["envelopes"]
    if len(frames) != len(exp["frames"]):
        diffs.append("%d frames, expected %d" % (len(frames), len(exp["frames"])))
    for i, (got, want) in enumerate(zip(frames, exp["frames"])):
        content = bytes.fromhex(got["payload_hex"])
        if got["self_contained"] != want["self_contained"]:
            diffs.append("frame %d: self_contained %s" % (i, got["self_contained"]))
        if got["payload_length"] != want["content"]["length"]:
            diffs.append("frame %d: content length %d, expected %d" % (i, got["payload_length"], want["content"]["length"]))
        if not blob_matches(want["content"], content):
            diffs.append("frame %d: content bytes differ" % i)
    if len(envelopes) != len(exp["envelopes"]):
        diffs.append("%d envelopes, expected %d" % (len(envelopes), len(exp["envelopes"])))
    for i, (got, want) in enumerate(zip(envelopes, exp["envelopes"])):
        for field in ENVELOPE_FIELDS:
            if got[field] != want[field]:
                diffs.append("envelope %d: %s %r, expected %r" % (i, field, got[field], want[field]))
        if not blob_matches(want["body"], bytes.fromhex(got["body_hex"])):
            diffs.append("envelope %d: body differs" % i)
    return diffs


def encode_candidates(case):
    """The single frame a peer should be able to reproduce, or None (with a reason)."""
    exp = case["expected"]
    if not case["valid"] or case["decode_only"] or len(exp["frames"]) != 1:
        return None
    frame = exp["frames"][0]
    if frame["reserved"] != 0:
        return None  # written by hand with reserved bits set; no conforming sender does (FMT-6/10)
    return frame


def reference_decode(binary, fmt, data):
    """The reference's JSON decode of `data` (--checksum crc32), or an error string."""
    proc = subprocess.run([str(binary), "decode", "--format", fmt, "--checksum", "crc32", "--json", "-"],
                          input=data, capture_output=True, timeout=60)
    if proc.returncode not in (0, 1):
        return "reference exited %d: %s" % (proc.returncode, proc.stderr.decode(errors="replace")[-500:])
    try:
        return json.loads(proc.stdout)
    except ValueError as e:
        return "reference output is not JSON: %s" % e


def frame_content(case, frame, data, binary):
    """The content of a case's single frame: inline in the manifest, else decoded from the case's
    bytes by the reference and checked against the manifest's sha256."""
    content = blob_bytes(frame["content"])
    if content is None:
        decoded = reference_decode(binary, case["format"], data)
        ok = isinstance(decoded, dict) and not decoded.get("error") and len(decoded.get("frames", [])) == 1
        content = bytes.fromhex(decoded["frames"][0]["content"]) if ok else b""
        if not blob_matches(frame["content"], content):
            sys.exit("crosscheck: cannot recover the content of %s from its bytes" % case["id"])
    return content


def compare_encode(case, frame, output, binary):
    """Differences between a peer's encoding of `frame` and the manifest."""
    if case["format"] == "uncompressed":
        expected = (VECTORS / case["input"]["file"]).read_bytes()
        if output == expected:
            return []
        at = first_difference(output, expected)
        return ["output (%d bytes) differs from the case's bytes (%d) at byte %d: %s vs %s"
                % (len(output), len(expected), at, output[at:at + 6].hex(), expected[at:at + 6].hex())]
    decoded = reference_decode(binary, case["format"], output)
    if isinstance(decoded, str):
        return [decoded]
    if decoded.get("error"):
        return ["the reference rejects the peer's frame: %s" % json.dumps(decoded["error"])[:200]]
    frames = decoded.get("frames", [])
    if len(frames) != 1:
        return ["the reference decodes %d frames from the peer's output" % len(frames)]
    diffs = []
    if frames[0]["self_contained"] != frame["self_contained"]:
        diffs.append("self_contained %s" % frames[0]["self_contained"])
    if not blob_matches(frame["content"], bytes.fromhex(frames[0]["content"])):
        diffs.append("content after decompression differs")
    return diffs


# ---------------------------------------------------------------- main

def main(argv):
    suggest = "--suggest" in argv[1:]
    verbose = "--verbose" in argv[1:]
    started = time.monotonic()
    manifest = json.loads(MANIFEST.read_text())
    known = json.loads(DEVIATIONS.read_text()) if DEVIATIONS.exists() else {}
    binary = cqlframe_binary("crosscheck")
    usable, skipped_patterns = chunkings(manifest)

    cases = manifest["cases"]
    sessions = [c for c in cases if c["kind"] == "session"]
    frames_cases = [c for c in cases if c["kind"] == "frames"]
    checked = [c for c in frames_cases if c["checksum"] == "crc32"]
    other_checksum = [c for c in frames_cases if c["checksum"] != "crc32"]

    # One batch per peer: every decode, then every encode.
    ops = {p: [] for p in PEERS}
    plan = []  # (kind, case, chunking name, frame or None, op index)
    for case in checked:
        data = (VECTORS / case["input"]["file"]).read_bytes()
        if not blob_matches(case["input"], data):
            sys.exit("crosscheck: %s does not match its manifest entry" % case["input"]["file"])
        for name, size in usable:
            op = {"id": "%s@%s" % (case["id"], name), "op": "decode", "format": case["format"], "input_hex": data.hex()}
            if size:
                op["chunk_size"] = size
            plan.append(("decode", case, name, None, len(ops[PEERS[0]])))
            for p in PEERS:
                ops[p].append(dict(op, messages="opaque") if p == "java" else op)
        frame = encode_candidates(case)
        if frame is not None:
            content = frame_content(case, frame, data, binary)
            op = {"id": "%s@encode" % case["id"], "op": "encode", "format": case["format"],
                  "self_contained": frame["self_contained"], "payload_hex": content.hex()}
            plan.append(("encode", case, "encode", frame, len(ops[PEERS[0]])))
            for p in PEERS:
                ops[p].append(op)

    out = {}
    threads = [threading.Thread(target=run_peer, args=(p, ops[p], out)) for p in PEERS]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    harness_failures = []  # (peer, op id, problem)
    # observations[peer][case id][chunking] = reason of the deviation (only deviations)
    observations = {p: {} for p in PEERS}
    table = {p: {"valid agree": 0, "valid disagree": 0, "invalid rejected": 0, "invalid accepted": 0,
                 "encode agree": 0, "encode disagree": 0} for p in PEERS}
    wrong_reason = {p: 0 for p in PEERS}
    checks = {p: [] for p in PEERS}  # (case id, chunking) of every check run
    lz4_identical = {p: [0, 0] for p in PEERS}  # LZ4 encodes byte-identical to ours, of all
    details = []  # (peer, op id, outcome) for --verbose

    for peer in PEERS:
        results, problem, seconds = out[peer]
        if results is None:
            harness_failures.append((peer, "(batch)", problem))
            continue
        for kind, case, name, frame, index in plan:
            op, res = ops[peer][index], results[index]
            problem = harness_problem(op, res)
            if problem:
                harness_failures.append((peer, op["id"], problem))
                continue
            checks[peer].append((case["id"], name))
            deviation = None
            if kind == "encode":
                diffs = [res.get("error", "error")] if not res["ok"] else \
                    compare_encode(case, frame, bytes.fromhex(res["output_hex"]), binary)
                table[peer]["encode " + ("disagree" if diffs else "agree")] += 1
                if case["format"] == "lz4" and res["ok"]:
                    lz4_identical[peer][1] += 1
                    lz4_identical[peer][0] += res["output_hex"] == (VECTORS / case["input"]["file"]).read_bytes().hex()
                if diffs:
                    deviation = "encode: " + "; ".join(diffs[:2])
            elif case["valid"]:
                diffs = ["error: %s" % res["error"]] if not res["ok"] else compare_decode(case, res)
                table[peer]["valid " + ("disagree" if diffs else "agree")] += 1
                if diffs:
                    deviation = "; ".join(diffs[:2])
            else:
                table[peer]["invalid " + ("accepted" if res["ok"] else "rejected")] += 1
                if res["ok"]:
                    deviation = "accepts what the spec rejects (%s)" % rule_of(case)
                elif str(res.get("error", "")).startswith("driver dropped"):
                    wrong_reason[peer] += 1
            if verbose:
                outcome = "ok" if res["ok"] else "error: %s" % res.get("error")
                details.append((peer, op["id"], ("valid " if case["valid"] else "invalid %s " % rule_of(case)) + outcome))
            if deviation:
                observations[peer].setdefault(case["id"], {})[name] = deviation[:300]

    # Canonical keys: `case` when every decode chunking deviates, else `case@chunking`.
    decode_names = [n for n, _ in usable]
    seen = {p: {} for p in PEERS}  # key -> (reason, number of checks it covers)
    for peer in PEERS:
        for case_id, by_name in observations[peer].items():
            decode_devs = {n: r for n, r in by_name.items() if n != "encode"}
            if set(decode_devs) == set(decode_names):
                reasons = sorted(set(decode_devs.values()))
                seen[peer][case_id] = (reasons[0] if len(reasons) == 1 else " | ".join(reasons), len(decode_devs))
            else:
                for n, r in decode_devs.items():
                    seen[peer]["%s@%s" % (case_id, n)] = (r, 1)
            if "encode" in by_name:
                seen[peer]["%s@encode" % case_id] = (by_name["encode"], 1)

    unexpected, stale, expected_hits = [], [], 0
    for peer in PEERS:
        if out[peer][0] is None:
            continue
        listed = known.get(peer, {})
        for key, (reason, n) in sorted(seen[peer].items()):
            if key in listed:
                expected_hits += n
            else:
                unexpected.append((peer, key, reason, n))
        for key in sorted(set(listed) - set(seen[peer])):
            stale.append((peer, key, listed[key]))
    for peer in known:
        if peer not in PEERS:
            stale.append((peer, "*", "unknown peer"))

    total_checks = sum(len(checks[p]) for p in PEERS)
    failed = sum(n for *_, n in unexpected) + len(stale) + len(harness_failures)
    passed = total_checks - sum(n for *_, n in unexpected)

    # ------------------------------------------------------------ report
    print("Cross-check of %s against driver peers" % MANIFEST.relative_to(ROOT))
    print("  cases: %d frames cases with crc32 checked; %d crc32c frames cases skipped (the drivers implement "
          "only CRC32); %d session cases skipped (the peers decode frame streams, not handshakes)"
          % (len(checked), len(other_checksum), len(sessions)))
    print("  chunkings fed: %s; skipped (the peers take one chunk_size, not a pattern): %s"
          % (", ".join(n if n == "whole" else "chunk_size %s" % n for n in decode_names),
             ", ".join(str(p) for p in skipped_patterns) or "none"))
    for peer in PEERS:
        results, problem, seconds = out[peer]
        print("  peer %-6s %d ops in %.1f s%s" % (peer, len(ops[peer]), seconds, "" if results else " FAILED: " + problem))
    print()
    cols = ["valid agree", "valid disagree", "invalid rejected", "invalid accepted", "encode agree", "encode disagree"]
    print("%-8s" % "peer" + "".join("%18s" % c for c in cols))
    for peer in PEERS:
        print("%-8s" % peer + "".join("%18d" % table[peer][c] for c in cols))
    for peer in PEERS:
        if wrong_reason[peer]:
            print("  (%s: %d of the invalid rejections are only the driver dropping a partial header at a read "
                  "boundary, not the case's error)" % (peer, wrong_reason[peer]))
    print("  LZ4 encodes byte-identical to the case's bytes (not required): %s"
          % ", ".join("%s %d of %d" % (p, *lz4_identical[p]) for p in PEERS))
    if verbose:
        print("\nevery result:")
        for peer, op_id, outcome in details:
            print("  %-6s %-58s %s" % (peer, op_id, outcome[:160]))
    print()
    for peer in PEERS:
        listed = known.get(peer, {})
        hits = [k for k in sorted(seen[peer]) if k in listed]
        print("known deviations still seen, %s: %d" % (peer, len(hits)))
        for key in hits:
            print("  %-62s %s" % (key, listed[key]))
    if unexpected:
        print("\nNEW deviations (not in %s):" % DEVIATIONS.relative_to(ROOT))
        for peer, key, reason, n in unexpected:
            print("  %s %s: %s" % (peer, key, reason))
    if stale:
        print("\nSTALE entries in %s (no longer seen):" % DEVIATIONS.relative_to(ROOT))
        for peer, key, reason in stale:
            print("  %s %s: %s" % (peer, key, reason))
    if harness_failures:
        print("\nHARNESS failures (a peer did not answer as its contract says):")
        for peer, op_id, problem in harness_failures[:50]:
            print("  %s %s: %s" % (peer, op_id, problem))
    if suggest:
        suggestion = {p: {k: known.get(p, {}).get(k, r) for k, (r, _) in sorted(seen[p].items())} for p in PEERS}
        print("\nsuggested %s:" % DEVIATIONS.name)
        print(json.dumps(suggestion, indent=2, sort_keys=True))
    print("\nruntime %.1f s" % (time.monotonic() - started))
    print("crosscheck: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
