// The election's znode names (actors/manager/election.ts): managers are ordered by the sequence number
// ZooKeeper appends, not by name -- each name starts with a random guid, so sorting the names would
// elect whichever guid sorts first, and two managers could each believe the other one is ahead.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { electionOrder, electionPaths } from '../../../../actors/manager/election.js';

test('election order: by the 10-digit sequence suffix, not by name; foreign children ignored', () => {
  const names = ['cm-ffff0000-0000000003', 'cm-00000000-0000000010', 'cm-abcdef12-0000000002', 'lock', 'cm-zz-notasequence'];
  assert.deepEqual(electionOrder(names), ['cm-abcdef12-0000000002', 'cm-ffff0000-0000000003', 'cm-00000000-0000000010']);
});

test('election paths sit beside the configuration znode', () => {
  assert.deepEqual(electionPaths('/rowan/demo/config'), { dir: '/rowan/demo/managers', active: '/rowan/demo/manager' });
});
