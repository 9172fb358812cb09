// CRC32C (@node-rs/crc32, hardware CRC) for the pool's checksums, loaded with require(): imported as an
// ES module, Node first lexes the package's 28 KB CommonJS entry for its export names, about 20 ms
// of CPU in every thread that loads it -- a node's main thread, each actor thread and its lease
// thread, at every start.
import { createRequire } from 'node:module';

type Crc32 = typeof import('@node-rs/crc32');

export const crc32c: Crc32['crc32c'] = (createRequire(import.meta.url)('@node-rs/crc32') as Crc32).crc32c;
