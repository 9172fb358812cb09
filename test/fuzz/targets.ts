// Fuzz targets: the parsers that take bytes from outside a node (the client protocol, the tcp fabric's
// nic protocol, RESP) or from a pool that may hold torn or planted bytes (the log and b-log scanners).
// A target consumes one input; the error types a target is allowed to throw are its documented
// refusals (RowanError with a stable code, RespProtocolError); anything else thrown is a crash. A target
// also checks what it can about the data it accepted, and throws FuzzViolation when that is wrong.
import { defaultLimits } from '../../config/limits.js';
import { RowanError } from '../../config/base/errors.js';
import * as nic from '../../runtime/fabric/nic-frames.js';
import { RespProtocolError, RespRequestParser } from '../../runtime/resp/parser.js';
import { respLimits } from '../../runtime/resp/limits.js';
import { scanBlogBlocks } from '../../runtime/rowan/blog-scan.js';
import { FrameReader, decodeRequest, decodeResponse, encodeRequest, encodeResponse } from '../../runtime/rpc/frames.js';
import { Op, Status, requestBytesMax } from '../../runtime/rpc/frames-layout.js';
import { EntryType, encodeBlocks, encodeEntry, entrySize, readBlock, readEntryAt, scanBlocks, scanEntries } from '../../shm/log.js';
import { chunks } from './mutate.js';
import { nicVerbs } from './nic-verbs.js';
import { setChecksumSeed } from '../../shm/log-checksum.js';

import { FuzzViolation, type FuzzTarget } from './target.js';
export { FuzzViolation, type FuzzTarget };



const enc = (s: string) => new TextEncoder().encode(s);
const limits = defaultLimits;
const frameLimits = { keyBytesMax: limits.keyBytesMax, valueBytesMax: limits.valueBytesMax };
const isRowanError = (e: unknown) => e instanceof RowanError && typeof e.code === 'string' && e.code.startsWith('ROWAN_ERR_');

function violation(ok: boolean, what: string): void {
  if (!ok) throw new FuzzViolation(what);
}

const rpc: FuzzTarget = {
  name: 'rpc-frames',
  corpus: [
    encodeRequest({ op: Op.HELLO, id: 1, term: 1, version: 1 }),
    encodeRequest({ op: Op.PUT, id: 2, term: 3, key: enc('key'), value: enc('value'.repeat(20)) }),
    encodeRequest({ op: Op.GET, id: 3, term: 3, key: enc('k') }),
    encodeRequest({ op: Op.DEL, id: 4, term: 3, key: enc('k') }),
    encodeRequest({ op: Op.CONFIG, id: 5, term: 0 }),
    encodeRequest({ op: Op.REPLICATE, id: 6, term: 3, block: new Uint8Array(128) }),
    encodeResponse({ status: Status.VALUE, id: 7, term: 3, value: enc('v'.repeat(100)) }),
    encodeResponse({ status: Status.ERROR, id: 8, term: 3, code: 'ROWAN_ERR_STALE_TERM', message: 'stale' }),
    encodeResponse({ status: Status.CONFIG, id: 9, term: 3, json: '{"term":3}' }),
  ],
  run(input, rng) {
    const r = new FrameReader(requestBytesMax(frameLimits));
    for (const c of chunks(rng, input)) {
      r.push(c);
      for (let f = r.next(); f !== null; f = r.next()) {
        let decoded = 0;
        try {
          const q = decodeRequest(f, frameLimits);
          decoded++;
          if (q.op === Op.PUT) violation(q.key.length <= limits.keyBytesMax && q.value.length <= limits.valueBytesMax, 'a PUT over the limits decoded');
        } catch (e) {
          if (!isRowanError(e)) throw e;
        }
        try {
          decodeResponse(f, frameLimits);
          decoded++;
        } catch (e) {
          if (!isRowanError(e)) throw e;
        }
        violation(decoded <= 2, 'unreachable');
      }
    }
    violation(r.buffered() <= input.length, 'the reader holds more bytes than it was given');
  },
  expected: isRowanError,
  refuses: true,
};

const nicFrames: FuzzTarget = {
  name: 'nic-frames',
  corpus: [
    nic.encodeRequest({ op: nic.Op.HELLO, id: 1, version: 2, senderId: 3, nonce: new Uint8Array(32).fill(5) }),
    nic.encodeRequest({ op: nic.Op.AUTH, id: 7, proof: new Uint8Array(32).fill(6) }),
    nic.encodeSend(2, new Uint8Array(256).fill(7)),
    nic.encodeRequest({ op: nic.Op.WRITE, id: 3, offset: 4096, data: new Uint8Array(64).fill(1) }),
    nic.encodeRequest({ op: nic.Op.READ, id: 4, offset: 4096, length: 1 }),
    nic.encodeRequest({ op: nic.Op.ALLOC, id: 5, ownerId: 2 }),
    nic.encodeReply({ op: nic.Op.SEND, id: 2, offset: 8192, reissues: 0, noBufferRetries: 1 }),
    nic.encodeReply({ op: nic.Op.ALLOC, id: 5, segment: 3, offset: 65536, length: 65536 }),
    nic.errorReply(6, new RowanError('ROWAN_ERR_PM_FULL' as never, 'full')),
  ],
  run(input, rng) {
    const d = new nic.FrameDecoder();
    for (const c of chunks(rng, input)) {
      d.push(c);
      for (let f = d.next(); f !== null; f = d.next()) {
        if (f.op & nic.REPLY_BIT) nic.parseReply(f);
        else nic.parseRequest(f);
      }
    }
    violation(d.buffered() <= input.length, 'the decoder holds more bytes than it was given');
  },
  expected: isRowanError,
  refuses: true,
};

/** A log region: entries of every shape back to back, as a t-log segment holds them. */
function logRegion(): Uint8Array {
  const entries = [
    { type: EntryType.Put, shard: 1, version: 1, key: enc('alpha'), value: enc('one') },
    { type: EntryType.Put, shard: 2, version: 7, key: enc('beta'), value: new Uint8Array(5000).fill(9) },
    { type: EntryType.Del, shard: 1, version: 2, key: enc('alpha') },
    { type: EntryType.CommitVer, shard: 3, version: 9 },
    { type: EntryType.Put, shard: 1, version: 3, key: enc('gamma'), value: new Uint8Array(0) },
  ];
  const out = new Uint8Array(entries.reduce((a, e) => a + entrySize(e, limits), 0) + 256);
  let at = 0;
  for (const e of entries) at += encodeEntry(e, out, at, limits);
  return out;
}

const logScan: FuzzTarget = {
  name: 'log-scan',
  corpus: [logRegion()],
  run(input) {
    for (const e of scanEntries(input, 0, input.length, limits)) {
      // Whatever the scan accepts must read back identically from where it says it is.
      const again = readEntryAt(input, e.offset, limits, input.length);
      violation(again !== null && again.version === e.version && again.key.length === e.key.length && again.value.length === e.value.length, `entry at ${e.offset} does not read back`);
    }
    for (const b of scanBlocks(input, 0, input.length, limits)) violation(readBlock(input, b.offset, input.length, limits) !== null, `block at ${b.offset} does not verify`);
  },
  expected: isRowanError,
  refuses: false,
};

/** A b-log region: blocks of several senders' entries at stride-aligned places, with holes. */
function blogRegion(): Uint8Array {
  const out = new Uint8Array(64 * 1024);
  let at = 0;
  for (let i = 0; i < 6; i++) {
    const blocks = encodeBlocks({ type: EntryType.Put, shard: i, version: i + 1, key: enc(`k${i}`), value: new Uint8Array(i * 1500).fill(i) }, limits);
    for (const b of blocks) {
      out.set(b, at);
      at += b.length + (i % 2) * 64; // every other entry leaves a hole, as an abandoned slot does
    }
  }
  return out.subarray(0, at + 64);
}

const blogScan: FuzzTarget = {
  name: 'blog-scan',
  corpus: [blogRegion()],
  run(input) {
    for (const b of scanBlogBlocks(input, 0, input.length, limits)) {
      violation(b.offset % limits.entryAlignBytes === 0, `block at unaligned offset ${b.offset}`);
      violation(readBlock(input, b.offset, input.length, limits) !== null, `block at ${b.offset} does not verify`);
    }
  },
  expected: isRowanError,
  refuses: false,
};

/** The cluster seed the keyed b-log target checksums with (shm/log-checksum.ts). */
const KEYED_SEED = 0x5eed1234;

/** blog-scan with checksums keyed as a seeded cluster keys them: the same acceptance rules. */
const blogScanKeyed: FuzzTarget = {
  name: 'blog-scan-keyed',
  corpus: (() => {
    setChecksumSeed(KEYED_SEED);
    try {
      return [blogRegion()];
    } finally {
      setChecksumSeed(0);
    }
  })(),
  run(input, rng) {
    setChecksumSeed(KEYED_SEED);
    try {
      blogScan.run(input, rng);
    } finally {
      setChecksumSeed(0);
    }
  },
  expected: isRowanError,
  refuses: false,
};

const resp: FuzzTarget = {
  name: 'resp',
  corpus: [
    enc('*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n'),
    enc('*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n*1\r\n$4\r\nPING\r\n'),
    enc('PING\r\nSET a "b c"\r\n'),
    enc('*5\r\n$4\r\nMSET\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n'),
    enc('*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n'),
  ],
  run(input, rng) {
    const p = new RespRequestParser(respLimits(limits.valueBytesMax));
    for (const c of chunks(rng, input)) {
      p.push(Buffer.from(c.buffer, c.byteOffset, c.length));
      for (let a = p.next(); a !== null; a = p.next()) violation(a.length > 0, 'an empty request was returned');
    }
  },
  expected: (e) => e instanceof RespProtocolError,
  refuses: true,
};

export const targets: readonly FuzzTarget[] = [rpc, nicFrames, logScan, blogScan, blogScanKeyed, nicVerbs, resp];
