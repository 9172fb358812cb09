// The tcp fabric's sender end, loaded at run time: runtime/fabric/tcp.ts is being built alongside this
// benchmark, so the benchmark does not import it statically (a missing or reshaped module must cost
// the tcp row, not the build). Switch: ROWAN_BENCH_TCP=off skips the tcp row.
import type { RowanConnection } from '../../runtime/fabric/fabric.js';

interface TcpModule {
  TcpConnection?: { connect(o: { host: string; port: number; senderId?: number }): Promise<RowanConnection> | RowanConnection };
}

const modulePath = '../../runtime/fabric/tcp.js';

export async function loadTcp(): Promise<TcpModule['TcpConnection'] | string> {
  if (process.env.ROWAN_BENCH_TCP === 'off') return 'ROWAN_BENCH_TCP=off';
  try {
    const mod = (await import(modulePath)) as TcpModule;
    if (typeof mod.TcpConnection?.connect !== 'function') return 'runtime/fabric/tcp.js has no TcpConnection.connect';
    return mod.TcpConnection;
  } catch (err) {
    return `runtime/fabric/tcp.js cannot be loaded (${(err as Error).message.split('\n')[0]})`;
  }
}

export async function connectTcp(ep: { host: string; port: number }, o: { senderId: number }): Promise<RowanConnection> {
  const tcp = await loadTcp();
  if (typeof tcp === 'string') throw new Error(`tcp fabric unavailable: ${tcp}`);
  return await tcp!.connect({ ...ep, ...o });
}
