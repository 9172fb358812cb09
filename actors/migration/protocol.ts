// Ring records the migration actor takes and sends (§4.6). Shard moves are ordered by the CM through
// the configuration, not through these rings.
import type { PingRecord, PongRecord } from '../../shm/mailbox.js';

export type MigrationInbound = PingRecord;
export type MigrationOutbound = PongRecord;
