// Where a node's `verbs` fabric finds its RDMA devices: libibverbs' device list (the default and the
// only choice in production), or the loopback RNIC (native/verbs-loopback.ts), a software device
// that lets tests run whole nodes -- separate processes included -- over the production verbs path on
// a machine without RDMA hardware. The choice is made once, by whoever starts the node (startNode's
// `verbsDevices`, `rowan start --verbs-loopback DIR`), and crosses into every actor thread in its
// start message (runtime/lifecycle.ts); each thread applies it before anything opens a device.
import { resolve } from 'node:path';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { LOOPBACK_DIR_CHARS_MAX, loopbackVerbsLibrary } from '../../native/verbs-loopback.js';
import { useVerbsLibrary } from '../../native/verbs.js';

export type VerbsDevices =
  /** libibverbs: the kernel's RDMA devices. */
  | { kind: 'rdma' }
  /** The loopback RNIC; every node of one emulated fabric names the same directory. */
  | { kind: 'loopback'; dir: string };

/** The shortest replication retry bound (config replication.retryMs) the loopback RNIC can meet: its
 *  round trip is an event-loop hop between processes, milliseconds on a busy machine. */
export const LOOPBACK_RETRY_MS_MIN = 10;

/** The loopback device spec for `dir`, checked (its sockets must fit a unix socket path). */
export function loopbackDevices(dir: string): VerbsDevices {
  const abs = resolve(dir);
  if (abs.length > LOOPBACK_DIR_CHARS_MAX) {
    throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--verbs-loopback ${abs}: at most ${LOOPBACK_DIR_CHARS_MAX} characters (its unix sockets live there)`);
  }
  return { kind: 'loopback', dir: abs };
}

/** What this thread selected last ('rdma' or the loopback's dir): a thread is given one choice. */
let selected: string | null = null;

/** Make this thread's verbs binding use `devices` (absent: libibverbs). Once per thread: actors sharing
 *  a thread (runtime/placement.ts) share its device list, as threads of a process share libibverbs --
 *  a second loopback RNIC would not know the contexts the first one opened. */
export function selectVerbsDevices(devices: VerbsDevices | undefined): void {
  const key = devices?.kind === 'loopback' ? devices.dir : 'rdma';
  if (key === selected) return;
  selected = key;
  useVerbsLibrary(devices?.kind === 'loopback' ? loopbackVerbsLibrary(devices.dir) : null);
}
