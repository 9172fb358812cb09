// Every command the documentation names inline, in a `code span` of its prose, is checked against the
// real command line (issue "the docs cannot rot"; the ```sh blocks are run by
// test/integration/docs-commands.test.ts). The code spans of README.md and docs/*.md outside fences
// (test/fixtures/doc-commands.ts extracts them, across line breaks) that start with `rowan `,
// `bin/rowan `, `npm run `, `npm start` or `npm test` (after any VAR=value) are split at `&&` and each
// part is checked:
//   rowan SUB ...       SUB exists (`rowan start/status/stop`, `rowan cluster|manager`: each one), as
//                       do nested ones (`rowan cluster stop`); every --flag is listed by `rowan SUB
//                       --help` or by a parent's --help (commander takes a parent's options after the
//                       subcommand too: `rowan cluster stop --dir D`); a value of a flag with choices
//                       is one of them; no more arguments than the usage line takes. The CLI itself is
//                       asked, `node bin/rowan SUB --help`, once per command, and must exit 0.
//   npm run SCRIPT ...  SCRIPT is in package.json (`npm start`, `npm test`: start, test). Its arguments
//                       are checked against the usage of the program the script runs (`node FILE
//                       --help`, exit 0): `npm run bench -- NAME --flag=V` needs a benchmark NAME the
//                       usage lists and a flag listed for it (or for the harness: --replot, --help);
//                       sim and fuzz: a flag their usage lists. A script without such a program takes
//                       no arguments here.
// Placeholders pass: `...`, `[flags]` (any [group] not starting with -), an UPPER-case word or
// host:port as a flag's value. A part of those spans that is none of these fails, unless ALLOWED says
// why it is not checked; an ALLOWED entry that matches no span fails too.
// Not checked: a value against a choice list given only in prose (`rowan cluster --fabric verbs`),
// whether the flags of one command make sense together, spans of other commands (`node scripts/...`,
// `npm ci`, `openssl ...`), and a sim flag named only in another flag's description counts as listed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { extractInlineSpans, readInlineSpans, splitAnd, type DocSpan } from '../../fixtures/doc-commands.js';

const root = new URL('../../../../', import.meta.url).pathname;

/** Parts of command spans that are not checked, each with the reason. */
const ALLOWED: { part: string; why: string }[] = [
  { part: 'npm pack', why: "npm's own command (running.md: pack the built package for another project), not a script of package.json" },
];

const PREFIXES = ['rowan ', 'bin/rowan ', 'npm run ', 'npm start', 'npm test'];

interface OptionHelp {
  /** `--dir <dir>`, `--x [v]`: the next word is its value. */
  takesValue: boolean;
  /** `(choices: "a", "b")`, or null. */
  choices: string[] | null;
}

/** What a commander --help says of one command. */
interface CommandHelp {
  options: Map<string, OptionHelp>;
  subcommands: string[];
  /** Positional arguments its usage line takes (Infinity: the last is variadic). */
  maxArgs: number;
}

/** The entries of each section of commander's help ("Options:", "Commands:"): term and description. */
function helpSections(text: string): Map<string, { term: string; desc: string }[]> {
  const sections = new Map<string, { term: string; desc: string }[]>();
  let cur: { term: string; desc: string }[] | null = null;
  for (const line of text.split('\n')) {
    if (/^\S.*:$/.test(line)) sections.set(line.slice(0, -1), (cur = []));
    else if (line.trim() === '') cur = null;
    else if (cur !== null && /^ {2}\S/.test(line)) {
      const [term, desc] = line.trim().split(/\s{2,}/, 2);
      cur.push({ term: term!, desc: desc ?? '' });
    } else if (cur !== null && cur.length > 0) cur.at(-1)!.desc += ` ${line.trim()}`;
  }
  return sections;
}

function parseHelp(text: string): CommandHelp {
  const sections = helpSections(text);
  const options = new Map<string, OptionHelp>();
  for (const { term, desc } of sections.get('Options') ?? []) {
    const choices = /\(choices: ([^)]*)\)/.exec(desc);
    const help = { takesValue: /[<[]/.test(term), choices: choices ? [...choices[1]!.matchAll(/"([^"]*)"/g)].map((m) => m[1]!) : null };
    for (const f of term.split(/[,\s]+/).filter((w) => w.startsWith('-'))) options.set(f, help);
  }
  const subcommands = (sections.get('Commands') ?? []).flatMap((e) => e.term.split(/\s/)[0]!.split('|'));
  const usage = (/^Usage: (.*)$/m.exec(text)?.[1] ?? '').split(/\s+/).filter((w) => /^[<[]/.test(w) && w !== '[options]' && w !== '[command]');
  const maxArgs = usage.some((w) => /\.\.\.[>\]]$/.test(w)) ? Infinity : usage.length;
  return { options, subcommands, maxArgs };
}

/** At most `n` of the functions given to it running at once (the machine is shared). */
function limiter(n: number): <T>(f: () => Promise<T>) => Promise<T> {
  let free = n;
  const waiting: (() => void)[] = [];
  return async <T>(f: () => Promise<T>): Promise<T> => {
    if (free > 0) free--;
    else await new Promise<void>((res) => waiting.push(res));
    try {
      return await f();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else free++;
    }
  };
}

interface Ran {
  code: number | null;
  out: string;
}

/** `node ARGS` in the repository, each distinct one once; a test runner's context is not passed on. */
class Programs {
  private readonly runs = new Map<string, Promise<Ran>>();
  private readonly limit = limiter(3);

  run(args: string[]): Promise<Ran> {
    const key = args.join('\0');
    let r = this.runs.get(key);
    if (r === undefined) this.runs.set(key, (r = this.limit(() => this.spawn(args))));
    return r;
  }

  get count(): number {
    return this.runs.size;
  }

  private spawn(args: string[]): Promise<Ran> {
    const env = { ...process.env };
    delete env['NODE_TEST_CONTEXT'];
    return new Promise((res, rej) => {
      const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
      let out = '';
      child.stdout.on('data', (b: Buffer) => (out += b.toString()));
      child.stderr.on('data', (b: Buffer) => (out += b.toString()));
      child.on('error', rej);
      child.on('close', (code) => res({ code, out }));
    });
  }
}

/** A word of a span: `...` and `[group]`s become `...`, the brackets of `[--flag V]` go. */
function words(text: string): string[] {
  const plain = text.replace(/\[(?!-)[^\]]*\]/g, ' ... ').replace(/[[\]]/g, ' ').replace(/…/g, '...');
  return [...plain.matchAll(/'[^']*'|"[^"]*"|\S+/g)].map((m) => m[0]);
}

const isEllipsis = (w: string) => w === '...';
const isFlag = (w: string) => w.startsWith('-') && w !== '-';
const helpOf = (path: string[]) => `\`${['rowan', ...path, '--help'].join(' ')}\``;
/** A word standing for a value: FILE, P, STEP:MS, host:port, ... */
const isPlaceholder = (w: string) => w.includes('...') || /^[A-Z][A-Z0-9_:,.-]*$/.test(w) || /^host:port$/.test(w);

/** FLAG (OPT: its help, if any command of PATH lists it) with VALUE (if any) of `rowan PATH`. */
function flagProblems(path: string[], flag: string, opt: OptionHelp | undefined, value: string | undefined): string[] {
  if (opt === undefined) return [`flag ${flag} is not in ${[...path.map((_, j) => path.slice(0, path.length - j)), []].map(helpOf).join(' nor ')}`];
  if (opt.choices === null || value === undefined || isPlaceholder(value) || value.split('|').every((c) => opt.choices!.includes(c))) return [];
  return [`${flag} ${value}: not one of its choices in ${helpOf(path)} (${opt.choices.join(', ')})`];
}

/** Checks command words against the real CLI and package.json; each problem a sentence. */
class Checker {
  readonly programs = new Programs();
  private readonly scripts: Record<string, string>;

  constructor() {
    this.scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  }

  /** `rowan PATH --help`, parsed; a problem if it does not exit 0. */
  async rowanHelp(path: string[]): Promise<CommandHelp | string> {
    const r = await this.programs.run(['bin/rowan', ...path, '--help']);
    if (r.code !== 0) return `\`rowan ${[...path, '--help'].join(' ')}\` exited ${r.code}: ${r.out.trim().slice(-300)}`;
    return parseHelp(r.out);
  }

  /** The words after `rowan` (or `bin/rowan`), for the command PATH (the subcommands read so far). */
  async rowan(rest: string[], path: string[] = []): Promise<string[]> {
    const chain = await Promise.all(path.map((_, i) => path.slice(0, i)).concat([path]).map((p) => this.rowanHelp(p)));
    const bad = chain.filter((h): h is string => typeof h === 'string');
    if (bad.length > 0) return bad;
    const helps = chain as CommandHelp[];
    const me = helps.at(-1)!;
    const problems: string[] = [];
    let args = 0;
    for (let i = 0; i < rest.length; i++) {
      const w = rest[i]!;
      if (isEllipsis(w)) continue;
      if (isFlag(w)) {
        const [flag, inline] = w.split(/=(.*)/s, 2) as [string, string | undefined];
        // A parent's option counts too; the nearest command's wins.
        const opt = helps.map((h) => h.options.get(flag)).reverse().find((o) => o !== undefined);
        // An unknown flag takes the word after it as well, so that one wrong flag is one problem.
        const next = rest[i + 1];
        const value = inline ?? ((opt?.takesValue ?? true) && next !== undefined && !isFlag(next) ? (i++, next) : undefined);
        problems.push(...flagProblems(path, flag, opt, value));
        continue;
      }
      if (me.subcommands.length > 0 && args === 0) return [...problems, ...(await this.subcommand(me, path, w, rest.slice(i + 1)))];
      if (++args > me.maxArgs) problems.push(`unexpected argument ${w}: ${helpOf(path)} takes ${me.maxArgs === 0 ? 'none' : `at most ${me.maxArgs}`}`);
    }
    return problems;
  }

  /** WORD where `rowan PATH` expects a subcommand: each of its alternatives (`start/status`, `a|b`). */
  private async subcommand(me: CommandHelp, path: string[], word: string, rest: string[]): Promise<string[]> {
    const each = await Promise.all(
      word.split(/[|/]/).map((a) =>
        me.subcommands.includes(a) ? this.rowan(rest, [...path, a]) : [`unknown subcommand ${['rowan', ...path, a].join(' ')}: ${helpOf(path)} lists ${me.subcommands.join(', ')}`],
      ),
    );
    return each.flat();
  }

  /** The words after `npm`: run SCRIPT [npm flags] [-- ARGS], start, test. */
  async npm(rest: string[]): Promise<string[]> {
    const [verb, ...more] = rest;
    const script = verb === 'run' ? more.shift() : verb;
    if (script === undefined) return ['npm run without a script name'];
    if (this.scripts[script] === undefined) return [`no such npm script ${script} in package.json (it has ${Object.keys(this.scripts).join(', ')})`];
    const dash = more.indexOf('--');
    // Before `--`, a -flag is npm's own; any other word goes to the script, as everything after it.
    const args = dash < 0 ? more.filter((w) => !w.startsWith('-')) : [...more.slice(0, dash).filter((w) => !w.startsWith('-')), ...more.slice(dash + 1)];
    return args.length === 0 ? [] : this.scriptArgs(script, args);
  }

  /** ARGS of `npm run SCRIPT -- ARGS`, against the --help of the program the script runs. */
  private async scriptArgs(script: string, args: string[]): Promise<string[]> {
    const entry = [...this.scripts[script]!.matchAll(/\bnode (\S+\.m?js)\b/g)].at(-1)?.[1];
    if (entry === undefined) return [`npm run ${script} takes no arguments here: its script runs no \`node FILE\` whose --help could list them`];
    const r = await this.programs.run([entry, '--help']);
    if (r.code !== 0 || !/^usage:/im.test(r.out)) return [`\`node ${entry} --help\` (npm run ${script}) exited ${r.code} without a usage: ${r.out.trim().slice(-300)}`];
    const usage = parseScriptUsage(r.out);
    const problems: string[] = [];
    const names: string[] = [];
    for (let i = 0; i < args.length; i++) {
      const w = args[i]!;
      if (isEllipsis(w)) continue;
      if (!w.startsWith('-')) {
        if (usage.names === null) problems.push(`unexpected argument ${w}: \`npm run ${script} -- --help\` lists no names`);
        else if (!usage.names.has(w)) problems.push(`no benchmark ${w} in \`npm run ${script} -- --help\` (it lists ${[...usage.names.keys()].join(', ')})`);
        else names.push(w);
        continue;
      }
      const flag = w.split('=')[0]!;
      const known = usage.flags.has(flag) || (usage.names !== null && benchFlags(usage.names, names).has(flag));
      if (!known) problems.push(`flag ${flag} is not in \`npm run ${script} -- --help\`${names.length > 0 ? ` for ${names.join(', ')}` : ''}`);
      // A value word after a flag that takes one (`--seeds N`), or after an unknown flag (one problem, not two).
      const takes = !known || usage.flags.get(flag) === true;
      if (takes && !w.includes('=') && args[i + 1] !== undefined && !args[i + 1]!.startsWith('-')) i++;
    }
    return problems;
  }
}

interface ScriptUsage {
  /** Flags for every run, and whether a separate value word follows (`--seeds N`). */
  flags: Map<string, boolean>;
  /** Named runs (benchmarks) with their own flags; null when the usage lists none. */
  names: Map<string, Set<string>> | null;
}

const FLAG = /(?<![\w-])(--?[a-zA-Z][\w-]*)(=| [A-Z][A-Z_]*\b)?/g;

/** The flags a text names, each true when some mention of it has a value word after it (`--seeds N`). */
function flagsIn(text: string): Map<string, boolean> {
  const flags = new Map<string, boolean>();
  for (const m of text.matchAll(FLAG)) flags.set(m[1]!, flags.get(m[1]!) === true || (m[2] ?? '').startsWith(' '));
  return flags;
}

/**
 * A program's usage text. bench/run.ts lists benchmarks as `  NAME  ~TIME  title`, each followed by
 * its `flags: ...` line; the harness's own flags are those of the `usage:` lines (up to the first blank
 * line). Without such a list, every flag the text names is one of the program's.
 */
function parseScriptUsage(text: string): ScriptUsage {
  const lines = text.split('\n');
  const names = new Map<string, Set<string>>();
  let last: Set<string> | null = null;
  for (const line of lines) {
    const bench = /^ {2}(\S+) +~/.exec(line);
    if (bench) names.set(bench[1]!, (last = new Set()));
    const flags = /^\s+flags: (.*)$/.exec(line);
    if (flags && last !== null) for (const f of flagsIn(flags[1]!).keys()) last.add(f);
  }
  if (names.size === 0) return { flags: new Map([...flagsIn(text), ['--help', false]]), names: null };
  const header = lines.slice(0, lines.findIndex((l) => l.trim() === '')).join('\n');
  return { flags: new Map([...flagsIn(header), ['--help', false]]), names };
}

/** The flags of the named benchmarks (of all, when none is named: flags go to every one run). */
function benchFlags(names: Map<string, Set<string>>, chosen: string[]): Set<string> {
  return new Set((chosen.length > 0 ? chosen : [...names.keys()]).flatMap((n) => [...names.get(n)!]));
}

interface Checked {
  span: DocSpan;
  kind: 'rowan' | 'npm' | 'allowed' | 'unknown' | 'not a command';
  problems: string[];
}

/** A span without its leading VAR=value assignments, if it starts with one of PREFIXES. */
function commandOf(text: string): string | null {
  const t = text.replace(/^([A-Z_][A-Z0-9_]*=\S*\s+)+/, '');
  return PREFIXES.some((p) => t.startsWith(p)) ? t : null;
}

/** One part of a command span (`a && b`: each of a, b). */
async function checkPart(checker: Checker, part: string): Promise<{ kind: Checked['kind']; problems: string[] }> {
  const w = words(part.replace(/^([A-Z_][A-Z0-9_]*=\S*\s+)+/, ''));
  if (w[0] === 'rowan' || w[0] === 'bin/rowan') return { kind: 'rowan', problems: await checker.rowan(w.slice(1)) };
  if (w[0] === 'npm' && ['run', 'start', 'test'].includes(w[1] ?? '')) return { kind: 'npm', problems: await checker.npm(w.slice(1)) };
  if (ALLOWED.some((a) => a.part === part)) return { kind: 'allowed', problems: [] };
  return { kind: 'unknown', problems: ['not a command this test can check: check it here, or add it to ALLOWED with the reason'] };
}

async function checkSpan(checker: Checker, span: DocSpan): Promise<Checked> {
  const text = commandOf(span.text);
  if (text === null) return { span, kind: 'not a command', problems: [] };
  const parts = await Promise.all(splitAnd(text).map((p) => checkPart(checker, p)));
  const problems = parts.flatMap((p, i) => p.problems.map((m) => (parts.length > 1 ? `${splitAnd(text)[i]}: ${m}` : m)));
  return { span, kind: parts[0]!.kind, problems };
}

function report(checked: Checked[]): string[] {
  return checked.flatMap((c) => c.problems.map((p) => `${c.span.file}:${c.span.line}: \`${c.span.text}\`: ${p}`));
}

const checker = new Checker();

test('the extractor: prose spans only, across line breaks, with ``double`` backticks, not escaped ones', () => {
  const md = [
    'Run `rowan cluster --dir',
    '  D` then ``npm run `x` `` and \\`not a span`.',
    '```sh',
    'rowan cluster `inside a fence`',
    '```',
    '- item `a',
    '- item b`',
    '# Heading `rowan start`',
  ].join('\n');
  assert.deepEqual(
    extractInlineSpans('x.md', md).map((s) => [s.line, s.text]),
    [[1, 'rowan cluster --dir D'], [2, 'npm run `x`'], [8, 'rowan start']],
  );
  assert.deepEqual(words('npm run fuzz -- [--inputs N] [--seed S] [flags]'), ['npm', 'run', 'fuzz', '--', '--inputs', 'N', '--seed', 'S', '...']);
});

test('the checker reports a bogus flag, subcommand, argument, choice, npm script, benchmark and benchmark flag', async () => {
  const md = [
    'Fine: `rowan cluster stop --dir D`, `rowan start/status/stop`, `rowan cluster|manager --no-auto-reshard`,',
    '`rowan start ... --manager host:port --fabric tcp`, `npm run bench -- failover --kills=3`, `X=1 npm start`.',
    'Rotten: `rowan cluster --no-such-flag` `rowan clutser --dir D` `rowan put/gte k` `rowan cluster stop --port 5`',
    '`rowan start extra` `rowan start --fabric tpc` `npm run bnech` `npm run bench -- failovr`',
    '`npm run bench -- failover --streams=2` `npm run sim -- --seedz 3` `npm run test:kills -- x` `npm run build && npm publish`',
  ].join('\n');
  const checked = await Promise.all(extractInlineSpans('made-up.md', md).map((s) => checkSpan(checker, s)));
  assert.deepEqual(report(checked.slice(0, 6)), [], 'false alarms');
  const problems = report(checked.slice(6));
  const expect = [
    /^made-up\.md:3: `rowan cluster --no-such-flag`: flag --no-such-flag is not in `rowan cluster --help` nor `rowan --help`$/,
    /:3: `rowan clutser --dir D`: unknown subcommand rowan clutser: `rowan --help` lists start, status, stop, put/,
    /:3: `rowan put\/gte k`: unknown subcommand rowan gte/,
    /:3: `rowan cluster stop --port 5`: flag --port is not in `rowan cluster stop --help` nor `rowan cluster --help` nor `rowan --help`/,
    /:4: `rowan start extra`: unexpected argument extra: `rowan start --help` takes none/,
    /:4: `rowan start --fabric tpc`: --fabric tpc: not one of its choices in `rowan start --help` \(shm, tcp, verbs\)/,
    /:4: `npm run bnech`: no such npm script bnech in package\.json/,
    /:4: `npm run bench -- failovr`: no benchmark failovr in `npm run bench -- --help`/,
    /:5: `npm run bench -- failover --streams=2`: flag --streams is not in `npm run bench -- --help` for failover/,
    /:5: `npm run sim -- --seedz 3`: flag --seedz is not in `npm run sim -- --help`/,
    /:5: `npm run test:kills -- x`: npm run test:kills takes no arguments here/,
    /:5: `npm run build && npm publish`: npm publish: not a command this test can check/,
  ];
  for (const e of expect) assert.ok(problems.some((p) => e.test(p)), `no problem matching ${e} in:\n${problems.join('\n')}`);
  assert.equal(problems.length, expect.length, problems.join('\n'));
});

test('every inline command of README.md and docs/*.md exists as written', async (t) => {
  const t0 = Date.now();
  const checked = await Promise.all(readInlineSpans(root).map((s) => checkSpan(checker, s)));
  const commands = checked.filter((c) => c.kind !== 'not a command');
  assert.ok(commands.length > 50, `only ${commands.length} command spans found: is the extractor broken?`);
  assert.deepEqual(report(commands), [], 'inline commands that do not match the CLI, package.json or the bench/sim/fuzz usage');
  const unused = ALLOWED.filter((a) => !commands.some((c) => splitAnd(commandOf(c.span.text)!).includes(a.part))).map((a) => a.part);
  assert.deepEqual(unused, [], 'ALLOWED entries that match no span');
  const count = (k: Checked['kind']) => commands.filter((c) => c.kind === k).length;
  t.diagnostic(`${commands.length} command spans of ${checked.length} (rowan ${count('rowan')}, npm ${count('npm')}); ${checker.programs.count} --help runs; ${Date.now() - t0} ms`);
});
