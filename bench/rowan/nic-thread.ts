// The soft RNIC of the tcp fabric for the Rowan benchmark: the nic's server on its own worker_thread
// (as the nic actor runs it), serving the benchmark receiver's data dir. Replies once with its
// endpoint and kernel tid (for CPU accounting); closes on 'close'.
import { parentPort, workerData } from 'node:worker_threads';
import { NicServer } from '../../actors/nic/nic-server.js';
import { gettid } from '../../native/libc.js';
import { monotonicClock } from '../../config/base/clock.js';
import { shmPaths } from '../../runtime/fabric/shm.js';
import { Pool } from '../../shm/pool.js';

const { dataDir } = workerData as { dataDir: string };
NicServer.listen({ dataDir, pool: () => Pool.open(shmPaths(dataDir).pool, { mode: 'pagecache' }), clock: monotonicClock, host: '127.0.0.1', port: 0, secret: null }).then(
  (nic) => {
    parentPort!.postMessage({ ok: true, endpoint: nic.endpoint, tid: gettid() });
    parentPort!.on('message', (m) => {
      if (m === 'close') void nic.close().finally(() => process.exit(0));
    });
  },
  (err: Error) => parentPort!.postMessage({ ok: false, message: err.message }),
);
