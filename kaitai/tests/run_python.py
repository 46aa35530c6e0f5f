#!/usr/bin/env python3
"""Runs the Kaitai Struct parsers generated for Python against the golden vectors.

For every frames case of vectors/manifest.json (read from each case's `input.file`):

* the generated stream parser (CqlFramesUncompressed / CqlFramesLz4) parses the input;
* this runner then does what a receiver does and the grammar cannot (spec "Decoding
  procedure"): CRC24 (RECV-1), checksum bit (RECV-3), payload checksum (RECV-2) with its own
  CRC code (checks.py), LZ4 block decoding (LZ4-1, LZ4-4, LZ4-6) followed by a parse of the content
  with the generated CqlEnvelopes, sequence reassembly parsed with the generated CqlEnvelope
  (RECV-6 to RECV-9), the receiver's body limit (RECV-12);
* valid cases: every frame field (self_contained, payload_length, uncompressed_length,
  checksum_bit, reserved, header_crc24, payload_checksum, payload, content, offset) and every
  envelope must equal the manifest's `expected`;
* invalid cases: the outcome must be the one vector_negatives.yaml gives for the case: a
  Kaitai exception class (grammar) or the rule the runner detects (runner).

Then the kst-like cases of kst/*.kst. The last line is `kaitai-python: N passed, M failed`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import sys

import yaml

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

from checks import (  # noqa: E402
    CATALOGUE,
    Lz4EndOfBlock,
    Lz4LengthMismatch,
    Lz4Malformed,
    crc24,
    lz4_block_decompress,
    payload_checksum,
)


class GrammarError(Exception):
    """A Kaitai error while parsing one stage of the receiver ("frames", "content", "sequence")."""

    def __init__(self, stage: str, name: str):
        super().__init__(f"{stage}: {name}")
        self.stage = stage
        self.kaitai = name


class Runner:
    def __init__(self, generated: pathlib.Path):
        sys.path.insert(0, str(generated))
        import kaitaistruct
        from cql_envelope import CqlEnvelope
        from cql_envelopes import CqlEnvelopes
        from cql_frame_lz4 import CqlFrameLz4
        from cql_frame_uncompressed import CqlFrameUncompressed
        from cql_frames_lz4 import CqlFramesLz4
        from cql_frames_uncompressed import CqlFramesUncompressed

        self.ks = kaitaistruct
        self.types = {
            "cql_envelope": CqlEnvelope,
            "cql_envelopes": CqlEnvelopes,
            "cql_frame_uncompressed": CqlFrameUncompressed,
            "cql_frame_lz4": CqlFrameLz4,
            "cql_frames_uncompressed": CqlFramesUncompressed,
            "cql_frames_lz4": CqlFramesLz4,
        }
        self.enums = {
            "cql_envelope::opcode": CqlEnvelope.Opcode,
            "cql_envelope::flag": CqlEnvelope.Flag,
            "cql_frame_uncompressed::payload_checksum_algorithm": CqlFrameUncompressed.PayloadChecksumAlgorithm,
            "cql_frame_lz4::payload_checksum_algorithm": CqlFrameLz4.PayloadChecksumAlgorithm,
        }

    # -- the kst generic names of the runtime's exceptions --------------------------------
    def error_name(self, exc: BaseException) -> str | None:
        if not isinstance(exc, self.ks.KaitaiStructError):
            return None
        return type(exc).__name__  # EndOfStreamError, ValidationNotEqualError, ...

    def parse_stage(self, stage: str, cls, data: bytes):
        """Parses with the generated class; a Kaitai error becomes a GrammarError of that stage."""
        try:
            return cls.from_bytes(data)
        except Exception as exc:  # noqa: BLE001 - classified here
            name = self.error_name(exc)
            if name is None:
                raise
            raise GrammarError(stage, name) from exc

    # -- the receiver around the grammar ------------------------------------------------------
    def decode(self, fmt: str, algorithm: str, max_body: int, data: bytes) -> dict:
        """Returns {frames, envelopes, error}; error is None, ("runner", rule) or
        ("grammar", stage, exception name)."""
        out = {"frames": [], "envelopes": [], "error": None}

        def fail_runner(rule):
            out["error"] = ("runner", rule)
            return out

        try:
            frames = self.parse_stage("frames", self.types[f"cql_frames_{fmt}"], data).frames
            offset, sequence = 0, None
            for f in frames:
                h = f.header
                lz4 = fmt == "lz4"
                size = (8 if lz4 else 6) + (h.compressed_length if lz4 else h.payload_length) + 4
                if crc24(h.crc24_input) != h.header_crc24:
                    return fail_runner("RECV-1")
                if h.checksum_bit != (algorithm == "crc32c"):
                    return fail_runner("RECV-3")
                payload = f.payload.bytes
                if payload_checksum(algorithm, payload) != f.payload_checksum:
                    return fail_runner("RECV-2")
                if lz4 and not h.is_stored:
                    try:
                        content = lz4_block_decompress(f.payload.block, h.uncompressed_length)
                    except (Lz4Malformed, Lz4LengthMismatch):
                        # every block failure fails LZ4-4, the receiver's rule (LZ4-1 binds senders)
                        return fail_runner("LZ4-4")
                    except Lz4EndOfBlock:
                        return fail_runner("LZ4-6")
                else:
                    content = payload
                out["frames"].append({
                    "offset": offset,
                    "self_contained": h.self_contained,
                    "payload_length": h.compressed_length if lz4 else h.payload_length,
                    "uncompressed_length": h.uncompressed_length if lz4 else None,
                    "checksum_bit": h.checksum_bit,
                    "reserved": h.reserved,
                    "header_crc24": f"{h.header_crc24:06x}",
                    "payload_checksum": f"{f.payload_checksum:08x}",
                    "payload": payload,
                    "content": content,
                })
                offset += size
                if h.self_contained:
                    if sequence is not None:
                        return fail_runner("RECV-8")
                    if lz4 and not h.is_stored:
                        envelopes = self.parse_stage("content", self.types["cql_envelopes"], content).envelopes
                    else:
                        envelopes = f.payload.envelopes
                    for e in envelopes:
                        if e.header.body_length > max_body:
                            return fail_runner("RECV-12")
                        out["envelopes"].append(self.envelope_record(e))
                else:
                    if not content:
                        return fail_runner("RECV-10")  # the grammar catches it first
                    sequence = (sequence or b"") + content
                    if len(sequence) >= 9:
                        header = self.parse_stage("sequence", self.types["cql_envelope"].Header, sequence[:9])
                        if header.body_length > max_body:
                            return fail_runner("RECV-12")
                        total = 9 + header.body_length
                        if len(sequence) > total:
                            return fail_runner("RECV-7")
                        if len(sequence) == total:
                            envelope = self.parse_stage("sequence", self.types["cql_envelope"], sequence)
                            out["envelopes"].append(self.envelope_record(envelope))
                            sequence = None
            if offset != len(data):
                raise AssertionError(f"frames cover {offset} of {len(data)} bytes")
            if sequence is not None:
                return fail_runner("RECV-9")
        except GrammarError as exc:
            out["error"] = ("grammar", exc.stage, exc.kaitai)
        return out

    def envelope_record(self, e) -> dict:
        h = e.header
        opcode = h.opcode
        code = opcode.value if hasattr(opcode, "value") else opcode
        name = opcode.name.upper() if hasattr(opcode, "name") else f"{code:#04x}"
        return {"version": h.version, "flags": h.flags, "stream": h.stream, "opcode": code,
                "opcode_name": name, "length": h.body_length, "body": e.body}

    # -- kst-like expressions ---------------------------------------------------------------
    def evaluate(self, obj, path: str):
        for part in path.split("."):
            index = None
            if part.endswith("]"):
                part, _, rest = part.partition("[")
                index = int(rest[:-1], 0)
            if part == "size" and isinstance(obj, (list, bytes)):
                obj = len(obj)
            else:
                obj = getattr(obj, part)
            if index is not None:
                obj = obj[index]
        return obj

    def expected_value(self, value):
        if isinstance(value, str) and "::" in value:
            enum_path, _, member = value.rpartition("::")
            return self.enums[enum_path][member]
        if isinstance(value, list):
            return bytes(value)
        return value


def same_blob(blob: dict, data: bytes) -> bool:
    if blob["length"] != len(data):
        return False
    if "hex" in blob:
        return blob["hex"] == data.hex()
    return blob["sha256"] == hashlib.sha256(data).hexdigest()


FRAME_FIELDS = ("offset", "self_contained", "payload_length", "uncompressed_length", "checksum_bit",
                "reserved", "header_crc24", "payload_checksum")
FRAME_BLOBS = ("payload", "content")
ENVELOPE_FIELDS = ("version", "flags", "stream", "opcode", "opcode_name", "length")
ENVELOPE_BLOBS = ("body",)


def compare_records(kind: str, got: list, want: list, fields, blobs, whole: bool = True) -> list[str]:
    """Differences between decoded records (`kind` frame or envelope) and the manifest's: their
    number (when `whole`), then each record's fields and blobs."""
    problems = []
    if whole and len(got) != len(want):
        problems.append(f"{len(got)} {kind}s, expected {len(want)}")
    for i, (g, w) in enumerate(zip(got, want)):
        for k in fields:
            if g[k] != w[k]:
                problems.append(f"{kind} {i} {k}: {g[k]!r} != {w[k]!r}")
        for k in blobs:
            if not same_blob(w[k], g[k]):
                problems.append(f"{kind} {i} {k} differs")
    return problems


def compare(got: dict, expected: dict, count_frames: int | None = None) -> list[str]:
    """Differences between decoded frames/envelopes and the manifest's; count_frames limits
    the comparison to the first frames (those decoded in full before an error)."""
    whole = count_frames is None
    problems = compare_records("frame", got["frames"], expected["frames"], FRAME_FIELDS, FRAME_BLOBS, whole)
    if whole:
        problems += compare_records("envelope", got["envelopes"], expected["envelopes"],
                                    ENVELOPE_FIELDS, ENVELOPE_BLOBS)
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--generated", type=pathlib.Path, default=ROOT / "build/kaitai/python")
    ap.add_argument("--vectors", type=pathlib.Path, default=ROOT / "vectors")
    ap.add_argument("--verbose", action="store_true", help="print every result, not only failures")
    args = ap.parse_args()

    runner = Runner(args.generated)
    manifest = json.loads((args.vectors / "manifest.json").read_text())
    negatives = yaml.safe_load((HERE / "vector_negatives.yaml").read_text())
    passed = failed = 0

    def report(ok: bool, name: str, detail: str = "") -> None:
        nonlocal passed, failed
        passed, failed = passed + ok, failed + (not ok)
        if not ok or args.verbose:
            print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}")

    # 1. the runner's own checksum code against the spec's catalogue
    for name, fn, data, want in CATALOGUE:
        got = fn(data)
        report(got == want, f"catalogue: {name}", "" if got == want else f"{got:#x} != {want:#x}")

    # 2. the golden vectors
    used_negatives = set()
    for case in (c for c in manifest["cases"] if c["kind"] == "frames"):
        fmt, algorithm = case["format"], case["checksum"]
        data = (args.vectors / case["input"]["file"]).read_bytes()
        exp = case["expected"]
        try:
            got = runner.decode(fmt, algorithm, case["max_envelope_body"], data)
        except Exception as exc:  # noqa: BLE001 - a crash is a failed test
            report(False, case["id"], f"{type(exc).__name__}: {exc}")
            continue
        if case["valid"]:
            problems = compare(got, exp)
            if got["error"] is not None:
                problems.insert(0, f"unexpected error {got['error']}")
            report(not problems, case["id"], "; ".join(problems))
            continue
        short = case["id"].split(".", 2)[2]
        entry = negatives.get(fmt, {}).get(short)
        if entry is None:
            report(False, case["id"], "no entry in vector_negatives.yaml")
            continue
        used_negatives.add((fmt, short))
        problems = []
        if entry["rule"] != exp["error"]["rule"]:
            problems.append(f"table says {entry['rule']}, manifest {exp['error']['rule']}")
        if "runner" in entry:
            want = ("runner", entry["rule"])
            problems += compare(got, exp, count_frames=len(exp["frames"]))
        else:
            want = ("grammar", entry["stage"], entry["exception"])
        if got["error"] != want:
            problems.append(f"outcome {got['error']}, expected {want}")
        report(not problems, case["id"], "; ".join(problems))
    for fmt, entries in negatives.items():
        for short in entries:
            if (fmt, short) not in used_negatives:
                report(False, f"vector_negatives.yaml {fmt}.{short}", "no such invalid case")

    # 3. kst-like cases
    for path in sorted((HERE / "kst").glob("*.kst")):
        kst = yaml.safe_load(path.read_text())
        name = f"kst {kst['id']}"
        data = (args.vectors / kst["data"]).read_bytes() if "data" in kst else bytes.fromhex(kst["data-hex"])
        cls = runner.types[kst["format"]]
        try:
            obj = cls.from_bytes(data)
        except Exception as exc:  # noqa: BLE001
            ok = runner.error_name(exc) is not None and runner.error_name(exc) == kst.get("exception")
            report(ok, name, "" if ok else f"{type(exc).__name__}: {exc}")
            continue
        if "exception" in kst:
            report(False, name, f"parsed, expected {kst['exception']}")
            continue
        problems = []
        for a in kst["asserts"]:
            try:
                actual = runner.evaluate(obj, a["actual"])
            except Exception as exc:  # noqa: BLE001
                problems.append(f"{a['actual']}: {type(exc).__name__}: {exc}")
                continue
            want = runner.expected_value(a["expected"])
            if actual != want:
                problems.append(f"{a['actual']} = {actual!r}, expected {want!r}")
        report(not problems, name, "; ".join(problems))

    print(f"kaitai-python: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
