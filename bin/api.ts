// The programmatic API (DESIGN §1): run a node, talk to a cluster, define actors, open Rowan connections.
export { startNode, type NodeOptions, type RowanNode } from '../runtime/node.js';
export { RowanClient, type ClientOptions, type PutOptions } from '../client/client.js';
export { defineActor, runActor, spawnActor, type ActorContext, type ActorDefinition } from '../runtime/actor.js';
export { ShmConnection } from '../runtime/fabric/shm.js';
export { TcpConnection } from '../runtime/fabric/tcp.js';
export { VerbsConnection } from '../runtime/fabric/verbs-sender.js';
// startNode's `verbsDevices`: libibverbs by default; the loopback RNIC for tests without RDMA hardware.
export { loopbackDevices, type VerbsDevices } from '../runtime/fabric/verbs-devices.js';
export type { RowanConnection, FabricKind } from '../runtime/fabric/fabric.js';
export { planCluster, newChecksumSeed, type ClusterConfig } from '../config/cluster.js';
export { FileConfigStore } from '../config/store.js';
export { resolveConfig } from '../config/load.js';
export { RowanError, ErrorCodes, type ErrorCode } from '../config/base/errors.js';
