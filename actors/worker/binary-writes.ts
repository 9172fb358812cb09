// The binary client port's key writes (PUT, PUT_EXPIRES, DEL) take the node's key locks
// (../shared/key-locks.ts), as every RESP write of a key does. Why: the expiry sweep decides under a
// key's lock that its indexed entry is expired and then writes a DEL at a newer version
// (./expired-deletes.ts); a binary PUT that claimed its version in between, without the lock, would be
// deleted by that DEL -- an acknowledged write gone. Holding the lock, the PUT either finishes (indexed)
// before the sweep looks, which then sees a live entry and skips the key, or starts after the sweep's
// DEL is indexed. A free stripe is taken without a wait, so an uncontended write pays two atomics.
import type { KvHandler } from '../../runtime/rpc/handler.js';
import type { SharedKeyLocks } from '../shared/key-locks.js';

/** `h` whose key writes hold their key's lock; every other request goes to `h` unchanged. */
export function lockingWrites<H extends KvHandler>(h: H, locks: SharedKeyLocks): H {
  const put: KvHandler['put'] = (key, value, term) => locks.run([key], () => h.put(key, value, term));
  const del: KvHandler['del'] = (key, term) => locks.run([key], () => h.del(key, term));
  const putExpiring: KvHandler['putExpiring'] = h.putExpiring
    ? (key, value, term, expiry) => locks.run([key], () => h.putExpiring!(key, value, term, expiry))
    : undefined;
  return new Proxy(h, {
    get(target, prop) {
      if (prop === 'put') return put;
      if (prop === 'del') return del;
      if (prop === 'putExpiring') return putExpiring;
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
