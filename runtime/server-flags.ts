// V8 flags every long-running rowan process starts with: a node (`rowan start`) and a configuration
// manager (`rowan manager`). `rowan cluster` passes them to the processes it spawns; `bin/rowan` carries
// them in its `#!` line for a process started by hand.
//
// --no-memory-reducer: V8's memory reducer runs a full GC whenever an isolate looks idle, to give a
// burst's heap back. An idle rowan process is never quite idle -- its lease renews every 20 ms, its
// actors tick -- so the reducer kept finding "idle" moments and collecting again: V8's helper threads
// woke 12-16 times a second in every process (issue 26: an idle 3-node cluster at 0.109-0.120 cores;
// with the flag 0.079-0.081, the helpers at ~1 wakeup a second; `npm run bench -- idle --quick`, two
// runs each, alternated). What it gives up: after a burst the heap keeps its size until allocation
// calls for a GC, as Redis keeps its memory.
export const SERVER_V8_FLAGS: readonly string[] = ['--no-memory-reducer'];
