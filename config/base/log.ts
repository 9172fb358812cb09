// Structured logs: pino, JSON lines on stderr (stdout stays for command output such as `rowan status`).
// Every thread builds its own logger writing synchronously to fd 2: lines from the main thread and the
// actors interleave whole (one write per line), and a line written just before a crash is not lost in
// a buffer. Logging is for rare events; nothing on a data path logs per message.
import { pino, type Logger as PinoLogger } from 'pino';

export type Logger = PinoLogger;
export const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof logLevels)[number];

export function createLogger(level: LogLevel, bindings: Record<string, unknown> = {}): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid, ...bindings },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    pino.destination({ fd: 2, sync: true }),
  );
}
