// Reading a link's fragment, on first load and when a second link is
// opened in the same tab (hashchange).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseFragment, canConnect } from '../src/link.js';

test('parseFragment reads the settings qo ui url writes', () => {
  const link = new URLSearchParams({ endpoint: 'http://127.0.0.1:9000', bucket: 'jobs', region: 'us-east-1', ak: 'AK', sk: 's/k+=', st: 'tok', exp: '2030-01-01T00:00:00Z' });
  const want = Object.fromEntries(link);
  assert.deepEqual(parseFragment(`#${link}`), want);
  assert.deepEqual(parseFragment(String(link)), want, 'with or without the #');
});

test('parseFragment of no fragment is empty', () => {
  for (const hash of ['', '#', undefined, null]) assert.deepEqual(parseFragment(hash), {});
});

test('a second link replaces every setting of the first', () => {
  const first = parseFragment('#bucket=one&ak=A1&sk=S1&st=T1&exp=2030-01-01T00:00:00Z');
  const second = parseFragment('#bucket=two&ak=A2&sk=S2');
  assert.deepEqual(second, { bucket: 'two', ak: 'A2', sk: 'S2' }, 'nothing of the first link remains (no session token, no expiry)');
  assert.notDeepEqual(first, second);
});

test('canConnect', () => {
  const cases = [
    [{ bucket: 'b', ak: 'a', sk: 's' }, true],
    [{ api: '/' }, true],
    [{ bucket: 'b' }, false],
    [{ ak: 'a', sk: 's' }, false],
    [{ bucket: 'b', ak: 'a' }, false],
    [{}, false],
  ];
  for (const [cfg, want] of cases) assert.equal(canConnect(cfg), want, JSON.stringify(cfg));
});
