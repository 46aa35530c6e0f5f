#!/usr/bin/env node
'use strict';
// Runs the Kaitai Struct parsers generated for JavaScript against the golden vectors: the same
// checks as run_python.py (see its docstring), with this language's runtime (npm
// kaitai-struct) and its own checksum and LZ4 code (checks.js).
//
//   NODE_PATH=<dir with kaitai-struct and js-yaml> node kaitai/tests/run_javascript.js \
//       [--generated build/kaitai/javascript] [--vectors vectors] [--verbose]
//
// The last line is `kaitai-javascript: N passed, M failed`.

const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const yaml = require('js-yaml');
const KaitaiStream = require('kaitai-struct/KaitaiStream');
const {
  crc24, payloadChecksum, CATALOGUE, Lz4Malformed, Lz4LengthMismatch, Lz4EndOfBlock, lz4BlockDecompress,
} = require('./checks');

const HERE = __dirname;
const ROOT = path.resolve(HERE, '..', '..');

function parseArgs(argv) {
  const args = {
    generated: path.join(ROOT, 'build/kaitai/javascript'),
    vectors: path.join(ROOT, 'vectors'),
    verbose: false,
  };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--generated') args.generated = path.resolve(argv[++i]);
    else if (argv[i] === '--vectors') args.vectors = path.resolve(argv[++i]);
    else if (argv[i] === '--verbose') args.verbose = true;
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  return args;
}

const args = parseArgs(process.argv.slice(2));
const load = (file, name) => require(path.join(args.generated, file))[name];
const TYPES = {
  cql_envelope: load('CqlEnvelope.js', 'CqlEnvelope'),
  cql_envelopes: load('CqlEnvelopes.js', 'CqlEnvelopes'),
  cql_frame_uncompressed: load('CqlFrameUncompressed.js', 'CqlFrameUncompressed'),
  cql_frame_lz4: load('CqlFrameLz4.js', 'CqlFrameLz4'),
  cql_frames_uncompressed: load('CqlFramesUncompressed.js', 'CqlFramesUncompressed'),
  cql_frames_lz4: load('CqlFramesLz4.js', 'CqlFramesLz4'),
};
const ENUMS = {
  'cql_envelope::opcode': TYPES.cql_envelope.Opcode,
  'cql_envelope::flag': TYPES.cql_envelope.Flag,
  'cql_frame_uncompressed::payload_checksum_algorithm': TYPES.cql_frame_uncompressed.PayloadChecksumAlgorithm,
  'cql_frame_lz4::payload_checksum_algorithm': TYPES.cql_frame_lz4.PayloadChecksumAlgorithm,
};

const parse = (cls, bytes) => new cls(new KaitaiStream(bytes));

// The kst generic names of the runtime's exceptions (null: not a Kaitai error).
const ERROR_NAMES = [
  [KaitaiStream.EOFError, 'EndOfStreamError'],
  [KaitaiStream.ValidationNotEqualError, 'ValidationNotEqualError'],
  [KaitaiStream.ValidationLessThanError, 'ValidationLessThanError'],
  [KaitaiStream.ValidationGreaterThanError, 'ValidationGreaterThanError'],
  [KaitaiStream.ValidationNotAnyOfError, 'ValidationNotAnyOfError'],
  [KaitaiStream.ValidationNotInEnumError, 'ValidationNotInEnumError'],
  [KaitaiStream.ValidationExprError, 'ValidationExprError'],
];
function errorName(exc) {
  for (const [cls, name] of ERROR_NAMES) if (exc instanceof cls) return name;
  return null;
}

class GrammarError extends Error {
  constructor(stage, name) {
    super(`${stage}: ${name}`);
    this.stage = stage;
    this.kaitai = name;
  }
}

// Parses with the generated class; a Kaitai error becomes a GrammarError of that stage.
function parseStage(stage, cls, bytes) {
  try {
    return parse(cls, bytes);
  } catch (exc) {
    const name = errorName(exc);
    if (name === null) throw exc;
    throw new GrammarError(stage, name);
  }
}

const hex = (n, width) => n.toString(16).padStart(width, '0');
const concat = (a, b) => {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
};

function envelopeRecord(e) {
  const h = e.header;
  const name = TYPES.cql_envelope.Opcode[h.opcode];
  return {
    version: h.version, flags: h.flags, stream: h.stream, opcode: h.opcode,
    opcode_name: name !== undefined ? name : `0x${hex(h.opcode, 2)}`,
    length: h.bodyLength, body: e.body,
  };
}

// The receiver around the grammar (spec "Decoding procedure"). Returns {frames, envelopes,
// error}; error is null, ['runner', rule] or ['grammar', stage, exception name].
function decode(fmt, algorithm, maxBody, data) {
  const out = { frames: [], envelopes: [], error: null };
  const lz4 = fmt === 'lz4';
  let frames;
  try {
    frames = parseStage('frames', TYPES[`cql_frames_${fmt}`], data).frames;
    let offset = 0;
    let sequence = null;
    const fail = (rule) => { out.error = ['runner', rule]; return out; };
    for (const f of frames) {
      const h = f.header;
      const length = lz4 ? h.compressedLength : h.payloadLength;
      if (crc24(h.crc24Input) !== h.headerCrc24) return fail('RECV-1');
      if (h.checksumBit !== (algorithm === 'crc32c')) return fail('RECV-3');
      const payload = f.payload.bytes;
      if (payloadChecksum(algorithm, payload) !== f.payloadChecksum) return fail('RECV-2');
      let content = payload;
      if (lz4 && !h.isStored) {
        try {
          content = lz4BlockDecompress(f.payload.block, h.uncompressedLength);
        } catch (exc) {
          // every block failure fails LZ4-4, the receiver's rule (LZ4-1 binds senders)
          if (exc instanceof Lz4Malformed || exc instanceof Lz4LengthMismatch) return fail('LZ4-4');
          if (exc instanceof Lz4EndOfBlock) return fail('LZ4-6');
          throw exc;
        }
      }
      out.frames.push({
        offset,
        self_contained: h.selfContained,
        payload_length: length,
        uncompressed_length: lz4 ? h.uncompressedLength : null,
        checksum_bit: h.checksumBit,
        reserved: h.reserved,
        header_crc24: hex(h.headerCrc24, 6),
        payload_checksum: hex(f.payloadChecksum, 8),
        payload,
        content,
      });
      offset += (lz4 ? 8 : 6) + length + 4;
      if (h.selfContained) {
        if (sequence !== null) return fail('RECV-8');
        const envelopes = lz4 && !h.isStored
          ? parseStage('content', TYPES.cql_envelopes, content).envelopes
          : f.payload.envelopes;
        for (const e of envelopes) {
          if (e.header.bodyLength > maxBody) return fail('RECV-12');
          out.envelopes.push(envelopeRecord(e));
        }
      } else {
        if (content.length === 0) return fail('RECV-10'); // the grammar catches it first
        sequence = sequence === null ? content : concat(sequence, content);
        if (sequence.length >= 9) {
          const header = parseStage('sequence', TYPES.cql_envelope.Header, sequence.subarray(0, 9));
          if (header.bodyLength > maxBody) return fail('RECV-12');
          const total = 9 + header.bodyLength;
          if (sequence.length > total) return fail('RECV-7');
          if (sequence.length === total) {
            out.envelopes.push(envelopeRecord(parseStage('sequence', TYPES.cql_envelope, sequence)));
            sequence = null;
          }
        }
      }
    }
    if (offset !== data.length) throw new Error(`frames cover ${offset} of ${data.length} bytes`);
    if (sequence !== null) return fail('RECV-9');
  } catch (exc) {
    if (!(exc instanceof GrammarError)) throw exc;
    out.error = ['grammar', exc.stage, exc.kaitai];
  }
  return out;
}

function sameBlob(blob, data) {
  if (blob.length !== data.length) return false;
  if ('hex' in blob) return blob.hex === Buffer.from(data).toString('hex');
  return blob.sha256 === crypto.createHash('sha256').update(data).digest('hex');
}

const FRAME_FIELDS = ['offset', 'self_contained', 'payload_length', 'uncompressed_length', 'checksum_bit',
  'reserved', 'header_crc24', 'payload_checksum'];
const FRAME_BLOBS = ['payload', 'content'];
const ENVELOPE_FIELDS = ['version', 'flags', 'stream', 'opcode', 'opcode_name', 'length'];
const ENVELOPE_BLOBS = ['body'];

// Differences between decoded records (`kind` frame or envelope) and the manifest's: their number
// (when `whole`), then each record's fields and blobs.
function compareRecords(kind, got, want, fields, blobs, whole = true) {
  const problems = [];
  if (whole && got.length !== want.length) problems.push(`${got.length} ${kind}s, expected ${want.length}`);
  const n = Math.min(got.length, want.length);
  for (let i = 0; i < n; i++) {
    const g = got[i];
    const w = want[i];
    for (const k of fields) if (g[k] !== w[k]) problems.push(`${kind} ${i} ${k}: ${g[k]} != ${w[k]}`);
    for (const k of blobs) if (!sameBlob(w[k], g[k])) problems.push(`${kind} ${i} ${k} differs`);
  }
  return problems;
}

// Differences from the manifest; countFrames limits the comparison to the first frames.
function compare(got, expected, countFrames) {
  const whole = countFrames === undefined;
  const problems = compareRecords('frame', got.frames, expected.frames, FRAME_FIELDS, FRAME_BLOBS, whole);
  if (whole) {
    problems.push(...compareRecords('envelope', got.envelopes, expected.envelopes, ENVELOPE_FIELDS, ENVELOPE_BLOBS));
  }
  return problems;
}

// kst-like expressions: dotted snake_case paths with [n] indexes and `size`.
const camel = (s) => s.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());
function evaluate(obj, expr) {
  for (let part of expr.split('.')) {
    let index = null;
    const m = /^(\w+)\[(\w+)\]$/.exec(part);
    if (m) { part = m[1]; index = Number(m[2]); }
    if (part === 'size' && (Array.isArray(obj) || obj instanceof Uint8Array)) obj = obj.length;
    else {
      const key = camel(part);
      if (!(key in obj)) throw new Error(`no field ${part}`);
      obj = obj[key];
    }
    if (index !== null) obj = obj[index];
  }
  return obj;
}
function expectedValue(value) {
  if (typeof value === 'string' && value.includes('::')) {
    const cut = value.lastIndexOf('::');
    return ENUMS[value.slice(0, cut)][value.slice(cut + 2).toUpperCase()];
  }
  if (Array.isArray(value)) return Uint8Array.from(value);
  return value;
}
function equal(a, b) {
  if (a instanceof Uint8Array && b instanceof Uint8Array) {
    return a.length === b.length && a.every((x, i) => x === b[i]);
  }
  return a === b;
}

function main() {
  const manifest = JSON.parse(fs.readFileSync(path.join(args.vectors, 'manifest.json'), 'utf8'));
  const negatives = yaml.load(fs.readFileSync(path.join(HERE, 'vector_negatives.yaml'), 'utf8'));
  let passed = 0;
  let failed = 0;
  const report = (ok, name, detail) => {
    if (ok) passed++; else failed++;
    if (!ok || args.verbose) console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? `: ${detail}` : ''}`);
  };

  // 1. the runner's own checksum code against the spec's catalogue
  for (const [name, fn, data, want] of CATALOGUE) {
    const got = fn(data);
    report(got === want, `catalogue: ${name}`, got === want ? '' : `${hex(got, 8)} != ${hex(want, 8)}`);
  }

  // 2. the golden vectors
  const used = new Set();
  for (const c of manifest.cases.filter((x) => x.kind === 'frames')) {
    const data = new Uint8Array(fs.readFileSync(path.join(args.vectors, c.input.file)));
    const exp = c.expected;
    let got;
    try {
      got = decode(c.format, c.checksum, c.max_envelope_body, data);
    } catch (exc) {
      report(false, c.id, `${exc.name}: ${exc.message}`);
      continue;
    }
    if (c.valid) {
      const problems = compare(got, exp);
      if (got.error !== null) problems.unshift(`unexpected error ${got.error}`);
      report(problems.length === 0, c.id, problems.join('; '));
      continue;
    }
    const short = c.id.split('.').slice(2).join('.');
    const entry = (negatives[c.format] || {})[short];
    if (!entry) {
      report(false, c.id, 'no entry in vector_negatives.yaml');
      continue;
    }
    used.add(`${c.format}.${short}`);
    const problems = [];
    if (entry.rule !== exp.error.rule) problems.push(`table says ${entry.rule}, manifest ${exp.error.rule}`);
    let want;
    if ('runner' in entry) {
      want = ['runner', entry.rule];
      problems.push(...compare(got, exp, exp.frames.length));
    } else {
      want = ['grammar', entry.stage, entry.exception];
    }
    if (JSON.stringify(got.error) !== JSON.stringify(want)) {
      problems.push(`outcome ${JSON.stringify(got.error)}, expected ${JSON.stringify(want)}`);
    }
    report(problems.length === 0, c.id, problems.join('; '));
  }
  for (const [fmt, entries] of Object.entries(negatives)) {
    for (const short of Object.keys(entries)) {
      if (!used.has(`${fmt}.${short}`)) report(false, `vector_negatives.yaml ${fmt}.${short}`, 'no such invalid case');
    }
  }

  // 3. kst-like cases
  const kstDir = path.join(HERE, 'kst');
  for (const file of fs.readdirSync(kstDir).filter((f) => f.endsWith('.kst')).sort()) {
    const kst = yaml.load(fs.readFileSync(path.join(kstDir, file), 'utf8'));
    const name = `kst ${kst.id}`;
    const data = 'data' in kst
      ? new Uint8Array(fs.readFileSync(path.join(args.vectors, kst.data)))
      : Uint8Array.from(Buffer.from(kst['data-hex'], 'hex'));
    let obj;
    try {
      obj = parse(TYPES[kst.format], data);
    } catch (exc) {
      const ok = errorName(exc) !== null && errorName(exc) === kst.exception;
      report(ok, name, ok ? '' : `${exc.name}: ${exc.message}`);
      continue;
    }
    if ('exception' in kst) {
      report(false, name, `parsed, expected ${kst.exception}`);
      continue;
    }
    const problems = [];
    for (const a of kst.asserts) {
      let actual;
      try {
        actual = evaluate(obj, a.actual);
      } catch (exc) {
        problems.push(`${a.actual}: ${exc.message}`);
        continue;
      }
      const want = expectedValue(a.expected);
      if (!equal(actual, want)) problems.push(`${a.actual} = ${actual}, expected ${want}`);
    }
    report(problems.length === 0, name, problems.join('; '));
  }

  console.log(`kaitai-javascript: ${passed} passed, ${failed} failed`);
  process.exitCode = failed === 0 ? 0 : 1;
}

main();
