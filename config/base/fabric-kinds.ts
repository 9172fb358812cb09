// The fabrics a node can replicate over (DESIGN §4; runtime/fabric/ implements them). A base module:
// the configuration validates against this list, below the runtime that implements it.
export type FabricKind = 'shm' | 'tcp' | 'verbs';
export const FABRIC_KINDS: readonly FabricKind[] = ['shm', 'tcp', 'verbs'];
