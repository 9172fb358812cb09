// The programmatic API (DESIGN §1): run a node, talk to a cluster, define actors, open Rowan connections.
export { startNode, type NodeOptions, type RowanNode } from './node.js';
export { RowanClient } from '../actors/client/client.js';
export { defineActor, runActor, spawnActor, type ActorContext, type ActorDefinition } from './actor.js';
export { ShmConnection } from './fabric/shm.js';
export { TcpConnection } from './fabric/tcp.js';
export type { RowanConnection, FabricKind } from './fabric/fabric.js';
export { planCluster, type ClusterConfig } from '../config/cluster.js';
export { FileConfigStore } from '../config/store.js';
export { resolveConfig } from '../config/load.js';
export { RowanError, ErrorCodes, type ErrorCode } from './errors.js';
