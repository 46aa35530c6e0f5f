'use strict';
/**
 * Conformance adapter for the Node.js driver (cassandra-driver), per conformance/README.md:
 * runs one case's workload through the driver's public API (Client) against the conformance
 * server and prints one JSON object on stdout. Exit 0: every request succeeded; 1: the driver
 * raised an error; 127: unsupported.
 *
 * The driver speaks protocol v3, v4 and the DSE versions (0x41, 0x42) but not v5: by default it
 * probes DSE_V2 and DSE_V1 and settles on v4, so it never frames. --protocol 5 and 6 are
 * unsupported (exit 127); --compression lz4 has no effect (the driver has no LZ4 option), and
 * there is no FRAME_CHECKSUM option. The harness marks the framing cases UNSUPPORTED for it
 * (no connection ever switched to framing, no STARTUP of version 5 or later).
 */
const crypto = require('crypto');

const ACTIONS = ['connect', 'select', 'prepare-select', 'concurrent-select', 'insert-large', 'idle-select'];
const SELECT = 'SELECT k, v FROM ks.t';

function parseArgs(argv) {
  const a = {
    host: '127.0.0.1', case: '', action: 'select', compression: 'default', checksum: 'default',
    protocol: 'default', timeout: '10', 'blob-size': '0', requests: '0', auth: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (k === '--auth') {
      a.auth = true;
    } else if (k.startsWith('--') && i + 1 < argv.length) {
      a[k.slice(2)] = argv[++i];
    }
  }
  return a;
}

function describe(e) {
  let s = `${e && e.name ? e.name : 'Error'}: ${e && e.message ? e.message : String(e)}`;
  if (e && e.innerErrors) {
    const inner = Object.entries(e.innerErrors).map(([h, ie]) => `${h}: ${ie && ie.message ? ie.message : ie}`);
    if (inner.length) {
      s += ` (${inner.join('; ')})`;
    }
  }
  return s;
}

function rowsReport(rs) {
  const h = crypto.createHash('sha256');
  let n = 0;
  for (const row of rs.rows) {
    // A null v is digested as on the wire: length -1 and no bytes.
    const v = row.v === null ? Buffer.alloc(0) : row.v;
    const head = Buffer.alloc(8);
    head.writeInt32BE(row.k, 0);
    head.writeInt32BE(row.v === null ? -1 : v.length, 4);
    h.update(head);
    h.update(v);
    n++;
  }
  return { rows: n, digest: h.digest('hex') };
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const report = { contract: 1, driver: 'nodejs', case: a.case, action: a.action };
  const emit = (code) => {
    process.stdout.write(JSON.stringify(report) + '\n');
    return code;
  };
  if (!ACTIONS.includes(a.action)) {
    report.unsupported = `unknown action ${a.action}`;
    return emit(127);
  }
  if (a.protocol === '5' || a.protocol === '6') {
    report.unsupported = `the driver does not support protocol v${a.protocol} (highest: v4 and DSE_V2)`;
    return emit(127);
  }
  const cassandra = require('cassandra-driver');
  report.driver_version = require('cassandra-driver/package.json').version;
  const ms = Math.round(parseFloat(a.timeout) * 1000);
  const options = {
    contactPoints: [a.host],
    protocolOptions: { port: parseInt(a.port, 10) },
    socketOptions: { connectTimeout: ms, readTimeout: ms },
    policies: {
      loadBalancing: new cassandra.policies.loadBalancing.RoundRobinPolicy(),
      // One attempt per request: a fault must surface as the request's failure.
      retry: new cassandra.policies.retry.FallthroughRetryPolicy(),
    },
  };
  if (a.protocol === '4') {
    options.protocolOptions.maxVersion = 4;
  }
  if (a.auth) {
    options.authProvider = new cassandra.auth.PlainTextAuthProvider('cassandra', 'cassandra');
  }
  if (a.compression === 'lz4') {
    report.compression_option = 'not available in this driver';
  }
  if (a.checksum === 'crc32c') {
    report.checksum_option = 'not available in this driver';
  }
  if (a.action === 'idle-select') {
    // Heartbeats are OPTIONS requests on idle connections: one per second.
    options.pooling = { heartBeatInterval: 1000 };
    report.heartbeat_interval_s = 1;
  }
  const client = new cassandra.Client(options);
  client.on('log', (level, className, message) => {
    if (level === 'warning' || level === 'error') {
      process.stderr.write(`${new Date().toISOString()} ${level} ${className}: ${message}\n`);
    }
  });
  const results = [];
  let error = null;
  const attempt = async (work) => {
    try {
      results.push(await work());
    } catch (e) {
      results.push({ error: describe(e) });
    }
  };
  try {
    await client.connect();
    report.negotiated = { protocol_version: client.controlConnection.protocolVersion };
    switch (a.action) {
      case 'connect':
        await client.execute('SELECT release_version FROM system.local');
        results.push({ ok: true });
        break;
      case 'select':
        await attempt(async () => rowsReport(await client.execute(SELECT, [], { prepare: false })));
        break;
      case 'idle-select':
        await new Promise((r) => setTimeout(r, 3000));
        await attempt(async () => rowsReport(await client.execute(SELECT, [], { prepare: false })));
        break;
      case 'prepare-select':
        await attempt(async () => rowsReport(await client.execute(SELECT, [], { prepare: true })));
        break;
      case 'concurrent-select': {
        const n = Math.max(1, parseInt(a.requests, 10));
        const settled = await Promise.allSettled(
          Array.from({ length: n }, () => client.execute(SELECT, [], { prepare: false })));
        for (const s of settled) {
          results.push(s.status === 'fulfilled' ? rowsReport(s.value) : { error: describe(s.reason) });
        }
        break;
      }
      case 'insert-large': {
        const size = parseInt(a['blob-size'], 10);
        const blob = Buffer.alloc(size);
        for (let i = 0; i < size; i++) {
          blob[i] = (i * 7 + 3) & 0xff;
        }
        const q = `INSERT INTO ks.t (k, v) VALUES (1, 0x${blob.toString('hex')})`;
        await attempt(async () => {
          await client.execute(q, [], { prepare: false });
          return { ok: true };
        });
        break;
      }
      default:
        break;
    }
  } catch (e) {
    error = describe(e);
  } finally {
    try {
      await client.shutdown();
    } catch (e) {
      report.shutdown_error = describe(e);
    }
  }
  report.results = results;
  report.error = error;
  const failed = error !== null || results.some((r) => 'error' in r);
  return emit(failed ? 1 : 0);
}

// The driver can raise an error on an internal emitter nobody listens to, which Node.js turns
// into an uncaught exception that ends the process: still a driver error for the report.
const failedWith = (e, how = '') => {
  process.stdout.write(JSON.stringify({ contract: 1, driver: 'nodejs', error: how + describe(e), results: [] }) + '\n');
  process.exit(1);
};
process.on('uncaughtException', (e) => failedWith(e, 'uncaught exception in the driver: '));
main().then((code) => process.exit(code), (e) => failedWith(e));
