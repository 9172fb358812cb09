// What each benchmark plots, from its rows: sweeps (sizes, streams, live share) as line charts with one
// series per mode, comparisons of unordered cases as (grouped) bar charts. A figure's title says what it
// plots; notes under it say what it leaves out. Used by the harness after a run and by `--replot`.
import { LatencyHistogram } from '../hist.js';
import type { Figure, Row } from '../report.js';
import { baseClient, IDLE, SERIES, systemSeries } from '../redis/rows.js';
import { barChartSvg, lineChartSvg, palette, type Bar, type Series } from './svg.js';
import { paperFigures } from './paper-figures.js';

type Rows = Row[];

function num(r: Row, c: string): number | null {
  const v = r[c];
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

function uniq<T>(xs: T[]): T[] {
  return [...new Set(xs)];
}

/** One series per distinct name(r), points (x(r), y(r)) of the rows that have both. */
function seriesBy(rows: Rows, name: (r: Row) => string, x: string, y: string): Series[] {
  return uniq(rows.map(name)).map((n) => ({
    name: n,
    points: rows
      .filter((r) => name(r) === n && num(r, x) !== null && num(r, y) !== null)
      .map((r) => [num(r, x)!, num(r, y)!] as [number, number]),
  }));
}

/** Grouped bars: a bar per distinct label(r), a value per series (seriesOf(r)); null where no row. */
function groupedBars(rows: Rows, label: (r: Row) => string, seriesOf: (r: Row) => string, value: string, series = uniq(rows.map(seriesOf))): { series: string[]; bars: Bar[] } {
  const bars = uniq(rows.map(label)).map((l) => ({
    label: l,
    values: series.map((s) => {
      const r = rows.find((x) => label(x) === l && seriesOf(x) === s);
      return r ? num(r, value) : null;
    }),
  }));
  return { series, bars };
}

function numbersOf(rows: Rows, c: string): number[] {
  return uniq(rows.map((r) => num(r, c)).filter((v): v is number => v !== null)).sort((a, b) => a - b);
}

/** A series per persistence mode and the back end that mapped it (rows before the back ends: the mode alone). */
const modeAndBackend = (r: Rows[number]): string => (r.backend === undefined || r.backend === '-' ? String(r.mode) : `${String(r.mode)} (${String(r.backend)})`);

const pmem2Persist = (rows: Rows): Figure[] => [
  {
    file: 'pmem2-persist.svg',
    svg: lineChartSvg({
      title: 'persist cost per call through koffi, by length, persistence mode and back end',
      notes: ['store into the range, then persist it; a line per mode and back end (libpmem2, libc alone); modes that do not map here (dax without a DAX file system) have no line'],
      x: { label: 'bytes persisted per call', log: true, ticks: numbersOf(rows, 'bytes') },
      y: { label: 'ns per persist', log: true },
      panels: [{ series: seriesBy(rows, modeAndBackend, 'bytes', 'nsPerOp') }],
    }),
  },
];

const log = (rows: Rows): Figure[] => {
  const append = rows.filter((r) => r.name === 'append+persist');
  const missing = uniq(append.filter((r) => num(r, 'nsPerOp') === null).map((r) => `${r.mode}: ${r.note}`));
  const scans = rows.filter((r) => r.name === 'scan' && num(r, 'opsPerSec') !== null);
  return [
    {
      file: 'log.svg',
      svg: lineChartSvg({
        title: 'log append + persist cost per entry, by encoded entry size, persistence mode and back end',
        notes: [
          ...scans.map((r) => `scan of one segment (${r.mode}, ${r.entryBytes} B entries, ${r.note}): ${Math.round(num(r, 'opsPerSec')!).toLocaleString('en-US')} entries/s`),
          ...missing.map((m) => `no line for ${m}`),
          'dram: a no-op persist (the codec and the copy alone)',
        ],
        x: { label: 'encoded entry size (bytes)', log: true, ticks: numbersOf(append, 'entryBytes') },
        y: { label: 'ns per appended entry', log: true },
        panels: [{ series: seriesBy(append.filter((r) => num(r, 'nsPerOp') !== null), modeAndBackend, 'entryBytes', 'nsPerOp') }],
      }),
    },
  ];
};

const index = (rows: Rows): Figure[] => [
  {
    file: 'index.svg',
    svg: barChartSvg({
      title: 'shard index throughput: get and upsert on ~1 M keys (hash64: hashing alone)',
      value: { label: 'operations per second (aggregate over the threads)' },
      series: ['ops/s'],
      bars: rows.map((r) => ({ label: `${r.name}, ${r.threads} thread(s) (${r.method ?? 'unknown method'})`, values: [num(r, 'opsPerSec')] })),
    }),
  },
];

const dlwa = (rows: Rows): Figure[] => [
  {
    file: 'dlwa.svg',
    svg: lineChartSvg({
      title: 'modelled DLWA against concurrent write streams: separate logs (rwrite) vs one merged log (Rowan)',
      notes: ['XPBuffer model (runtime/optane/xpbuffer.ts); paper points: Figure 2'],
      x: { label: 'concurrent write streams', ticks: numbersOf(rows, 'streams') },
      y: { label: 'DLWA (media bytes / request bytes)' },
      panels: numbersOf(rows, 'writeBytes').map((b) => {
        const rs = rows.filter((r) => r.writeBytes === b);
        const paper = rs.filter((r) => num(r, 'paperRwrite') !== null);
        return {
          title: `${b} B writes`,
          series: [
            { name: 'separate logs (rwrite), model', points: rs.map((r) => [num(r, 'streams')!, num(r, 'rwriteDlwa')!] as [number, number]) },
            { name: 'one merged log (Rowan), model', points: rs.map((r) => [num(r, 'streams')!, num(r, 'rowanDlwa')!] as [number, number]) },
            ...(paper.length ? [{ name: 'separate logs, paper (Figure 2)', points: paper.map((r) => [num(r, 'streams')!, num(r, 'paperRwrite')!] as [number, number]) }] : []),
          ],
        };
      }),
    }),
  },
];

const ring = (rows: Rows): Figure[] => [
  {
    file: 'ring.svg',
    svg: barChartSvg({
      title: 'messages/s between two pinned actors: SharedArrayBuffer ring vs postMessage, by batch size',
      value: { label: 'messages per second' },
      ...groupedBars(rows, (r) => `batch of ${r.batch} message(s)`, (r) => (r.name === 'ring' ? 'SAB ring' : String(r.name)), 'msgsPerSec'),
    }),
  },
];

const rowanSeries = (r: Row) => `${r.fabric} ${r.mode}${r.api === 'tryWrite' ? ' tryWrite' : ''}${r.holds === 'write' ? ' hold per write' : ''}${r.depth !== 1 ? `, ${r.depth} in flight` : ''}`;

const rowan = (rows: Rows): Figure[] => {
  const sizes = numbersOf(rows, 'bytes');
  const streams = numbersOf(rows, 'streams');
  const panels = (y: string) => sizes.map((b) => ({ title: `${b} B writes`, series: seriesBy(rows.filter((r) => r.bytes === b), rowanSeries, 'streams', y) }));
  const deep = rows.some((r) => r.depth !== 1);
  const notes = [
    `shm: DLWA from the persist trace; tcp: from the acked offsets.${deep ? ' "N in flight": writes in flight per stream (a point at the largest stream count).' : ''} Every series: 1 write in flight per stream unless named.`,
  ];
  // Lines at DLWA 1 lie on one another: say each series' value at the largest stream count.
  const most = streams[streams.length - 1];
  const atMost = sizes.map((b) => `at ${most} streams, ${b} B: ` + rows.filter((r) => r.bytes === b && r.streams === most && num(r, 'dlwa') !== null).map((r) => `${rowanSeries(r)} ${num(r, 'dlwa')}`).join(', '));
  return [
    {
      file: 'rowan.svg',
      svg: lineChartSvg({
        title: 'Rowan vs one-sided replication (rwrite / share / batch): modelled DLWA against concurrent write streams',
        notes: [...notes, ...atMost],
        x: { label: 'concurrent write streams', ticks: streams },
        y: { label: 'DLWA (media bytes / request bytes)' },
        panels: panels('dlwa'),
      }),
    },
    {
      file: 'rowan-throughput.svg',
      svg: lineChartSvg({
        title: 'Rowan vs one-sided replication: aggregate writes/s against concurrent write streams (same run as rowan.svg)',
        notes: ['2 sender threads on a shared 2-core machine: CPU-bound, compare the series, not the paper\'s numbers'],
        x: { label: 'concurrent write streams', ticks: streams },
        y: { label: 'writes per second (aggregate)' },
        panels: panels('writesPerSec'),
      }),
    },
  ];
};

const gc = (rows: Rows): Figure[] => [
  {
    file: 'gc.svg',
    svg: lineChartSvg({
      title: 'garbage collection throughput of one Cleaner against the live share of the cleaned segments, by value size',
      x: { label: 'live bytes in the cleaned segments (%)', ticks: numbersOf(rows, 'livePct') },
      y: { label: 'MB reclaimed per second of cleaning' },
      panels: [{ series: seriesBy(rows, (r) => `${r.valueBytes} B values`, 'livePct', 'reclaimMBps') }],
    }),
  },
];

const ycsbCell = (r: Row) => `${r.workload}, ${r.keys} keys, ${r.size} sizes`;
const ok = (rows: Rows) => rows.filter((r) => num(r, 'opsPerSec') !== null);

const ycsb = (rows: Rows): Figure[] => {
  const good = ok(rows);
  const failed = rows.filter((r) => num(r, 'opsPerSec') === null).map((r) => `${r.mode}: ${r.workload}`);
  const headline = good.filter((r) => r.keys === 'zipfian' && r.size === 'ZippyDB' && (r.workload === 'Load A' || r.workload === 'A'));
  const lat = ['putP50us', 'putP99us', 'getP50us', 'getP99us'];
  const latNames = ['PUT p50', 'PUT p99', 'GET p50', 'GET p99'];
  const modes = uniq(good.map((r) => String(r.mode)));
  const out: Figure[] = [
    {
      file: 'ycsb.svg',
      svg: barChartSvg({
        title: 'YCSB on a local 3-node cluster: throughput per cell and replication mode',
        notes: failed.length ? [`failed, no bars: ${failed.join('; ')}`] : [],
        value: { label: 'operations per second (closed loop, one client process)' },
        ...groupedBars(good, ycsbCell, (r) => String(r.mode), 'opsPerSec'),
      }),
    },
  ];
  if (headline.length)
    out.push({
      file: 'ycsb-latency.svg',
      svg: barChartSvg({
        title: 'YCSB latency per replication mode: Load A and A, Zipfian 0.99 keys, ZippyDB sizes',
        notes: ['timed at the client, request to reply; PUTs until persistent on every replica'],
        value: { label: 'latency (µs)', log: true },
        series: latNames,
        bars: headline.map((r) => ({ label: `${r.mode}, ${r.workload}`, values: lat.map((c) => num(r, c)) })),
      }),
    });
  const dl = modes.map((m) => good.find((r) => r.mode === m && num(r, 'dlwa') !== null)).filter((r): r is Row => r !== undefined);
  if (dl.length)
    out.push({
      file: 'ycsb-dlwa.svg',
      svg: barChartSvg({
        title: 'YCSB: modelled DLWA per replication mode over the whole run (load and every cell)',
        notes: [
          'XPBuffer model on each node\'s PM writes reconstructed from its pool after the run, summed over the 3 nodes',
          `PM logs written per node: ${dl.map((r) => `${r.mode} ${r.logsPerNode ?? '?'}`).join(', ')} -- too few concurrent streams for write combining to break down (rowan.svg: DLWA against streams)`,
        ],
        value: { label: 'DLWA (media bytes / request bytes)' },
        valueDigits: 5,
        series: ['DLWA'],
        bars: dl.map((r) => ({ label: String(r.mode), values: [num(r, 'dlwa')] })),
      }),
    });
  return out;
};

/** p50 and p99 (µs) of the union of the rows' encoded histograms in column `col`; nulls without any. */
function mergedPct(rows: Rows, col: string): [number | null, number | null] {
  const hs = rows.map((r) => r[col]).filter((v): v is string => typeof v === 'string');
  if (hs.length === 0) return [null, null];
  const h = LatencyHistogram.merge(hs.map((t) => LatencyHistogram.decode(t)));
  return [h.percentileUs(50), h.percentileUs(99)];
}

const ycsbGc = (rows: Rows): Figure[] => {
  const good = ok(rows);
  const failed = rows.filter((r) => num(r, 'opsPerSec') === null).map((r) => `${r.pool} round ${r.round}: ${r.workload}`);
  const rounds = numbersOf(good, 'round').map((n) => `round ${n}`);
  const cells = uniq(good.map((r) => `${r.workload}, ${r.pool} pools`));
  const lat = cells.map((label) => {
    const rs = good.filter((r) => `${r.workload}, ${r.pool} pools` === label);
    return { label, values: [...mergedPct(rs, 'putHdr'), ...mergedPct(rs, 'getHdr')] };
  });
  const latency: Figure[] = lat.some((b) => b.values.some((v) => v !== null))
    ? [{
        file: 'ycsb-gc-latency.svg',
        svg: barChartSvg({
          title: 'YCSB Load A and A on Rowan-KV: PUT and GET latency with big pools (GC off, GC on) vs small pools under GC pressure',
          notes: [`percentiles of every round's requests together (their HDR histograms merged, ${rounds.length} round(s)); timed at the client`],
          value: { label: 'latency (µs)', log: true },
          series: ['PUT p50', 'PUT p99', 'GET p50', 'GET p99'],
          bars: lat,
        }),
      }]
    : [];
  return [
    ...latency,
    {
      file: 'ycsb-gc.svg',
      svg: barChartSvg({
        title: 'YCSB Load A and A on Rowan-KV: ops/s with big pools (GC off, GC on) vs small pools under GC pressure, per round',
        notes: ['Zipfian 0.99 keys, ZippyDB sizes; rounds alternate the three pool set-ups on fresh clusters', ...(failed.length ? [`failed, no bars: ${failed.join('; ')}`] : [])],
        value: { label: 'operations per second' },
        ...groupedBars(good, (r) => `${r.workload}, ${r.pool} pools`, (r) => `round ${r.round}`, 'opsPerSec', rounds),
      }),
    },
  ];
};

const coldstart = (rows: Rows): Figure[] => [
  {
    file: 'coldstart.svg',
    svg: barChartSvg({
      title: 'cold start of one node: objects/s rebuilding the indexes from the pool, by objects held and helper threads',
      value: { label: 'objects rebuilt per second' },
      ...groupedBars(rows, (r) => `${num(r, 'objects')?.toLocaleString('en-US')} objects`, (r) => `${r.threads} thread(s)`, 'objectsPerSec'),
    }),
  },
];

const failover = (rows: Rows): Figure[] => {
  const kills = uniq(rows.map((r) => num(r, 'kills')).filter((k) => k !== null));
  return [
    {
      file: 'failover.svg',
      svg: barChartSvg({
        title: `failover after a primary is SIGKILLed under YCSB A: ms until each mark, and each phase's length (${kills.join('/')} kills)`,
        value: { label: 'ms (marks: after the kill; phases: from the previous mark)' },
        series: ['p50', 'p99'],
        // Marks are times after the kill ("detected"); phases are spans between marks ("detect (kill->detected)").
        bars: rows.map((r) => ({ label: String(r.phase).includes('(') ? `phase: ${r.phase}` : `mark: ${r.phase}`, values: [num(r, 'afterKillP50Ms'), num(r, 'afterKillP99Ms')] })),
      }),
    },
  ];
};

/** A bar per client, connections and test; rowan's cluster-aware clients share a bar with the plain one on Redis. */
const redisBar = (r: Row): string =>
  String(r.client).startsWith('ioredis')
    ? `ioredis, ${r.inFlight} streams over ${r.clients} client object${r.clients === 1 ? '' : 's'}, ${r.test}`
    : `${baseClient(String(r.client))} -c ${r.clients}, ${r.test}`;

const redis = (rows: Rows): Figure[] => {
  const measured = rows.filter((r) => r.test !== IDLE);
  // The bars: 50 connections (pipelined or not) and every ioredis run, by client objects; the sweep has
  // its own figure.
  const io = (r: Row) => String(r.client).startsWith('ioredis');
  const bars = measured
    .filter((r) => r.clients === 50 || io(r))
    .sort((a, b) => Number(io(a)) - Number(io(b)) || (io(a) ? num(a, 'clients')! - num(b, 'clients')! : 0));
  const series = SERIES.filter((s) => rows.some((r) => systemSeries(r) === s));
  const idle = rows.filter((r) => r.test === IDLE).map((r) => `${r.system} ${num(r, 'serverCores') ?? '?'}`);
  const sweep = measured.filter((r) => String(r.client).startsWith('redis-benchmark') && !String(r.client).includes('-P'));
  const colour = new Map(SERIES.map((s, i) => [s, palette[i % palette.length]!]));
  const lines = (y: string) =>
    uniq(sweep.map((r) => `${systemSeries(r)}, ${r.test}`)).map((name) => {
      const rs = sweep.filter((r) => `${systemSeries(r)}, ${r.test}` === name);
      return { name, style: { color: colour.get(systemSeries(rs[0]!))!, dash: rs[0]!.test === 'GET' ? '6 3' : '' }, points: rs.map((r) => [num(r, 'clients')!, num(r, y)!] as [number, number]) };
    });
  const notes = [
    'redis everysec / always: appendfsync policy; rowan, cluster client: redis-benchmark --cluster or ioredis Cluster objects (one connection per node each) on the cluster port; no data: that client does not apply to that system',
  ];
  const figs: Figure[] = [
    {
      file: 'redis.svg',
      svg: barChartSvg({
        title: "rowan's Redis front end vs Redis 7 (primary + 2 replicas, AOF): ops/s with the same clients",
        notes,
        value: { label: 'operations per second', log: true },
        ...groupedBars(bars.filter((r) => num(r, 'opsPerSec') !== null), redisBar, systemSeries, 'opsPerSec', series),
      }),
    },
  ];
  if (bars.some((r) => num(r, 'cpuUsPerOp') !== null))
    figs.push({
      file: 'redis-cpu.svg',
      svg: barChartSvg({
        title: 'server CPU per operation, rowan vs Redis 7, same runs as redis.svg: utime + stime of every server process (/proc/PID/stat) over the run / requests completed',
        notes: [...notes, `rowan: 3 node processes + the manager; Redis: primary + 2 replicas. Idle, no client (cores): ${idle.join(', ')}`],
        value: { label: 'server CPU µs per operation', log: true },
        ...groupedBars(bars.filter((r) => num(r, 'cpuUsPerOp') !== null), redisBar, systemSeries, 'cpuUsPerOp', series),
      }),
    });
  if (sweep.length)
    figs.push({
      file: 'redis-sweep.svg',
      svg: lineChartSvg({
        title: 'redis-benchmark SET and GET against connections: throughput and server CPU per operation, rowan vs Redis 7',
        notes: [
          'one request outstanding per connection (no pipelining); -d 91, keys drawn from 1 M; rowan, cluster client: redis-benchmark --cluster (connections spread over the 3 nodes)',
          `server CPU: rowan's 3 nodes + manager, Redis's primary + 2 replicas; idle, no client (cores): ${idle.join(', ')}. Solid: SET, dashed: GET`,
        ],
        x: { label: 'client connections (redis-benchmark -c)', log: true, ticks: numbersOf(sweep, 'clients') },
        y: { label: 'operations per second', log: true },
        panels: [
          { title: 'throughput', series: lines('opsPerSec') },
          { title: 'server CPU per operation', y: { label: 'server CPU µs per operation', log: true }, series: lines('cpuUsPerOp') },
        ],
      }),
    });
  return figs;
};

const reshardOf = (name: string) => (rows: Rows): Figure[] => [
  {
    file: `${name}.svg`,
    svg: barChartSvg({
      title: `dynamic resharding (Figure 15): total ops/s before the hotspot, during it (until the overload is detected) and after the ${name === 'reshard' ? 'move' : 'copy move to a node holding no replica'}`,
      notes: [`the timeline with each node's load is ${name}-timeline.svg; ${rows.map((r) => `nodes: ${String(r.network ?? 'loopback')}; CPU budget: ${String(r.cpuBudget ?? 'none')}`).join('; ')}`],
      value: { label: 'operations per second' },
      series: ['2 s before the hotspot', 'hotspot until detected', 'after the move'],
      bars: rows.map((r) => ({ label: `moved ${r.moved}`, values: [num(r, 'opsPerSecBefore'), num(r, 'opsPerSecHotspot'), num(r, 'opsPerSecAfter')] })),
    }),
  },
];

const rereplicate = (rows: Rows): Figure[] => [
  {
    file: 'rereplicate.svg',
    svg: barChartSvg({
      title: 're-replication: MB/s per shard copy, full (pool removed) and incremental (pool kept, after an absence)',
      notes: ['moved: bytes that crossed the wire; shard: the shard\'s data made a full replica again, over the time it took; all copies: every shard at once, first start to last end'],
      value: { label: 'MB/s', log: true },
      series: ['moved, per copy', 'shard, per copy', 'all copies at once (moved)'],
      bars: rows.map((r) => ({ label: String(r.copy), values: [num(r, 'movedMBpsPerCopy'), num(r, 'shardMBpsPerCopy'), num(r, 'allCopiesMBps')] })),
    }),
  },
];

/** Copy move: the load's throughput per 250 ms window, with the move's start and end marked. */
const copymove = (rows: Rows): Figure[] =>
  rows.map((r, i) => {
    const w = JSON.parse(String(r.windows ?? '[]')) as number[];
    const ops: [number, number][] = w.map((n, j) => [(j * 250) / 1000, n * 4]);
    const top = Math.max(1, ...ops.map((p) => p[1]));
    const mark = (name: string, t: number | null): Series[] => (t === null ? [] : [{ name, points: [[t / 1000, 0], [t / 1000, top]] }]);
    return {
      file: i === 0 ? 'copymove.svg' : `copymove-${i}.svg`,
      svg: lineChartSvg({
        title: `copy move of ${r.moved}: ${r.objects} objects (${r.copiedMB} MB) copied in ${r.copyMs} ms (${r.objectsPerSec} objects/s, ${r.copyMBps} MB/s), whole move ${r.moveMs} ms`,
        notes: [`load throughput: ${r.opsBefore} ops/s before, ${r.opsDuring} during, ${r.opsAfter} after the move (closed loop, GET/PUT on keys of every shard)`],
        x: { label: 'seconds since the load started' },
        y: { label: 'ops/s (per 250 ms window)' },
        panels: [{ title: 'load', series: [{ name: 'ops/s', points: ops }, ...mark('move asked', num(r, 'askedAtMs')), ...mark('move done', num(r, 'doneAtMs'))] }],
      }),
    };
  });

const copybatch = (rows: Rows): Figure[] => {
  const meds = rows.filter((r) => String(r.format).endsWith(' median'));
  return [
    {
      file: 'copybatch.svg',
      svg: barChartSvg({
        title: 'shard copy: CPU per object on each end, v2 vs packed batches (median over the reps, one run)',
        notes: ['primary: its walk builds the batch; new backup: decode and verify, then land in its log and index; in one process, no network (npm run bench -- copymove for a copy under load)'],
        value: { label: 'us of CPU per object' },
        series: ['primary walk', 'backup verify', 'backup land + index'],
        bars: meds.map((r) => ({ label: `${String(r.format).replace(' median', '')}, ${r.valueBytes} B values`, values: [num(r, 'readUs'), num(r, 'verifyUs'), num(r, 'landIndexUs')] })),
      }),
    },
  ];
};

const expiry = (rows: Rows): Figure[] => {
  const base = rows.find((r) => r.phase === 'no expiry');
  const exp = rows.find((r) => r.phase === 'expiring');
  const samples = rows.filter((r) => r.phase === 'sample');
  const flat = (name: string, v: number | null): Series[] => {
    const xs = samples.map((r) => num(r, 'second')).filter((x): x is number => x !== null);
    return v === null || xs.length === 0 ? [] : [{ name, points: [[Math.min(...xs), v], [Math.max(...xs), v]] }];
  };
  const p99 = base ? num(base, 'p99ms') : null;
  return [
    {
      file: 'expiry.svg',
      svg: lineChartSvg({
        title: `expiry under load: ${exp?.keys ?? '?'} keys with one deadline (second 0), GET/SET streams on other keys throughout`,
        notes: [`p99 over the whole expiry phase ${exp?.p99ms ?? '-'} ms = ${exp?.p99VsNoExpiry ?? '-'}x the run without expiry (${p99 ?? '-'} ms), first 15 s ${exp?.p99msFirst15s ?? '-'} ms = ${exp?.first15sVsNoExpiry ?? '-'}x; pools back to baseline ${exp?.reclaimed ? `after ${exp.reclaimedAfterS} s` : 'not within the bound'}`],
        x: { label: 'seconds after the deadline' },
        y: { label: 'p99 of the other requests, per second (ms)' },
        panels: [
          { title: 'other requests', series: [...seriesBy(samples, () => 'p99 per second', 'second', 'p99ms'), ...flat('p99 without expiry', p99), ...flat('2x that', p99 === null ? null : 2 * p99)] },
          {
            title: 'pool usage, all nodes',
            y: { label: 'segments not Free / index items (thousands)' },
            series: [
              ...seriesBy(samples, () => 'segments not Free', 'second', 'usedSegments'),
              ...flat('baseline segments', base ? num(base, 'usedSegments') : null),
              { name: 'index items (thousands)', points: samples.filter((r) => num(r, 'indexItems') !== null).map((r) => [num(r, 'second')!, num(r, 'indexItems')! / 1000] as [number, number]) },
            ],
          },
        ],
      }),
    },
  ];
};

/** Figures per benchmark name (the harness's names). */
export const figures: Record<string, (rows: Rows) => Figure[]> = {
  'pmem2-persist': pmem2Persist,
  log,
  index,
  dlwa,
  ring,
  rowan,
  gc,
  ycsb,
  coldstart,
  failover,
  redis,
  idle: () => [],
  'lease-soak': () => [],
  reshard: reshardOf('reshard'),
  'reshard-copy': reshardOf('reshard-copy'),
  rereplicate,
  copymove,
  copybatch,
  expiry,
  'ycsb-gc': ycsbGc,
  paper: (rows) => paperFigures(rows, dlwa),
};
