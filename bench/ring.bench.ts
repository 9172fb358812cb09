// Messages per second between two pinned threads: SAB ring (the actors' mailbox: Outbox/Inbox,
// doorbell, pump) vs postMessage over a MessageChannel between the same two threads, in the same run.
// Batch 1 publishes (or posts) every message alone; batch 32 publishes 32 records with one WRITE_PTR
// store (or posts one array of 32). The target: >= 5 M msgs/s batched through the ring.
// Runnable alone: node dist/bench/ring.bench.js
import { availableParallelism } from 'node:os';
import { pathToFileURL } from 'node:url';
import { schedGetaffinity } from '../native/libc.js';
import { formatTable, recordParams, type Row } from './report.js';
import { runPair } from './ring-peer.js';

/** Bounded message counts: enough for a steady rate, small enough for a 2-core CI box. */
const counts: Record<string, number> = { 'ring 1': 1_000_000, 'ring 32': 4_000_000, 'postMessage 1': 200_000, 'postMessage 32': 1_000_000 };

export async function run(): Promise<Row[]> {
  const allowed = schedGetaffinity(0);
  const cpus: [number, number] = [allowed[0]!, allowed[1] ?? allowed[0]!];
  recordParams({ messages: counts, batches: [1, 32], cpus });
  const rows: Row[] = [];
  for (const batch of [1, 32]) {
    const ring = await runPair('ring', counts[`ring ${batch}`]!, batch, cpus);
    const port = await runPair('port', counts[`postMessage ${batch}`]!, batch, cpus);
    for (const [r, name] of [[ring, 'ring'], [port, 'postMessage']] as const) {
      if (r.consumer.firstBadSeq >= 0) throw new Error(`${name} batch ${batch}: message ${r.consumer.firstBadSeq} lost or reordered`);
      rows.push({
        name,
        batch,
        msgsPerSec: Math.round(r.msgsPerSec),
        vsPostMessage: Number((r.msgsPerSec / port.msgsPerSec).toFixed(2)),
        producerCpu: r.producer.cpus.join(','),
        consumerCpu: r.consumer.cpus.join(','),
        messages: r.consumer.received,
      });
    }
  }
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(`ring vs postMessage, ${availableParallelism()} CPUs, node ${process.version}`);
  console.log(formatTable(await run()));
}
