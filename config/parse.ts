// Text forms of CPU lists and role lists, shared by the CLI and the config file.
//   CPU list:  "0-1", "0,1", "0-3,6"                  (the kernel's cpulist format)
//   role list: "worker:4,control,digest:2@1,clean:2"  (role[:count][@cpus]; in @cpus, '+' separates
//              CPUs since ',' separates roles: digest:2@0+1 or digest:2@0-1)
import { CPU_ID_MAX } from './base/ids.js';
import { ErrorCodes, RowanError } from './base/errors.js';
import { defaultLimits } from './limits.js';
import { roles, type Role, type RoleSpec } from './model.js';

const CPU_MAX = CPU_ID_MAX; // cpu_set_t holds 1024 CPUs (native/libc.ts CPU_SETSIZE)

export function parseCpuList(text: string, field = 'cores'): number[] {
  const bad = (why: string): never => {
    throw new RowanError(ErrorCodes.BAD_ARGUMENT, `${field}: '${text}' is not a CPU list (${why}); use e.g. 0-1 or 0,1`);
  };
  const out = new Set<number>();
  if (text.trim() === '') bad('empty');
  for (const part of text.split(',')) {
    const m = /^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$/.exec(part);
    if (!m) bad(`'${part}' is neither N nor N-M`);
    const lo = Number(m![1]);
    const hi = m![2] === undefined ? lo : Number(m![2]);
    if (hi < lo) bad(`range ${lo}-${hi} runs backwards`);
    if (hi > CPU_MAX) bad(`CPU ${hi} is above ${CPU_MAX}`);
    for (let c = lo; c <= hi; c++) out.add(c);
  }
  return [...out].sort((a, b) => a - b);
}

/** [0,1,2,5] -> "0-2,5" */
export function formatCpuList(cpus: readonly number[]): string {
  const s = [...cpus].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < s.length; ) {
    let j = i;
    while (j + 1 < s.length && s[j + 1] === s[j]! + 1) j++;
    parts.push(i === j ? `${s[i]}` : `${s[i]}-${s[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}

export function isRole(name: string): name is Role {
  return (roles as readonly string[]).includes(name);
}

export function parseRoles(text: string, field = 'roles'): RoleSpec[] {
  const specs: RoleSpec[] = [];
  if (text.trim() === '') throw new RowanError(ErrorCodes.BAD_ARGUMENT, `${field}: empty role list`);
  for (const item of text.split(',')) {
    const m = /^\s*([a-z]+)\s*(?::\s*(\d+)\s*)?(?:@\s*([\d+-]+)\s*)?$/.exec(item);
    if (!m)
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `${field}: '${item}' is not role[:count][@cpus] (e.g. worker:2)`);
    const [, name, countText, cpuText] = m;
    if (!isRole(name!))
      throw new RowanError(ErrorCodes.UNKNOWN_ROLE, `${field}: unknown role '${name}' (known roles: ${roles.join(', ')})`);
    const count = countText === undefined ? 1 : Number(countText);
    if (count < 1 || count > defaultLimits.actorsPerRoleMax)
      throw new RowanError(
        ErrorCodes.BAD_ARGUMENT,
        `${field}: ${name} count ${count} is outside 1..${defaultLimits.actorsPerRoleMax}`,
      );
    if (specs.some((s) => s.role === name))
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `${field}: role '${name}' is listed twice`);
    const spec: RoleSpec = { role: name, count };
    if (cpuText !== undefined) spec.cores = parseCpuList(cpuText.replace(/\+/g, ','), `${field} ${name}@`);
    specs.push(spec);
  }
  return specs;
}
