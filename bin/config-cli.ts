// `rowan config`: every key of a node's configuration with its environment variable, type, default and
// meaning -- printed from the schema (config/schema.ts) that also checks them, so this is what is
// checked. `--json-schema` prints a JSON Schema for `--config` files; `--markdown` the table of docs/configuration.md.
import type { Command } from 'commander';
import { defaultConfig } from '../config/defaults.js';
import { configJsonSchema, configKeys } from '../config/schema.js';

function defaultOf(key: string): string {
  if (key === 'dataDir') return '(--data-dir)';
  if (key === 'cores') return 'every CPU allowed';
  if (key === 'blog.preallocSegments' || key === 'blog.batchSegments') return 'scaled to the pool';
  if (key === 'fabric.remoteSegmentsMax') return 'a quarter of the pool';
  let v: unknown = defaultConfig('', [0]);
  for (const p of key.split('.')) v = (v as Record<string, unknown>)[p];
  if (key === 'roles') return (v as { role: string; count: number }[]).map((r) => (r.count === 1 ? r.role : `${r.role}:${r.count}`)).join(',');
  if (v === '') return '(none)';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** The table of configuration keys in docs/configuration.md (a test keeps the page equal to this). */
export function configMarkdown(): string {
  const rows = configKeys().map((k) => `| \`${k.key}\` | ${k.env ? `\`${k.env}\`` : '-'} | ${k.type.replace(/\|/g, '\\|')} | ${defaultOf(k.key).replace(/\|/g, '\\|')} | ${k.description.replace(/\|/g, '\\|')} |`);
  return ['| key | environment | type | default | meaning |', '|---|---|---|---|---|', ...rows].join('\n');
}

export function registerConfigCommand(p: Command, run: (f: () => Promise<number>) => () => Promise<void>): void {
  p.command('config')
    .description('list every node configuration key: its ROWAN_* environment variable, type, default and meaning (defaults <- --config file <- environment <- flags)')
    .option('--json-schema', 'print a JSON Schema for --config files instead')
    .option('--markdown', 'print the table as Markdown (as in docs/configuration.md)')
    .action(function (this: Command) {
      const o = this.opts<{ jsonSchema?: boolean; markdown?: boolean }>();
      return run(async () => {
        if (o.jsonSchema) console.log(JSON.stringify(configJsonSchema(), null, 2));
        else if (o.markdown) console.log(configMarkdown());
        else {
          const rows = configKeys().map((k) => [k.key, k.env ?? '-', k.type, defaultOf(k.key), k.description]);
          const w = [0, 1, 2, 3].map((i) => Math.max(...rows.map((r) => r[i]!.length)));
          for (const r of rows) console.log(r.map((c, i) => (i < 4 ? c.padEnd(w[i]!) : c)).join('  '));
        }
        return 0;
      })();
    });
}
