// Reading a link's fragment, on first load and when a second link is
// opened in the same tab (hashchange).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseFragment, canConnect, readLink, navFragment, isNavigation, VIEWS } from '../src/link.js';

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

const ID = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';

test('readLink splits the settings from where to go', () => {
  assert.deepEqual(readLink(`#api=/&token=T&view=dead&task=${ID}`), { cfg: { api: '/', token: 'T' }, nav: { view: 'dead', task: ID } });
  assert.deepEqual(readLink('#bucket=b&ak=A&sk=S'), { cfg: { bucket: 'b', ak: 'A', sk: 'S' }, nav: { view: '', task: '' } });
  assert.deepEqual(readLink(`#task=${ID}`).nav, { view: 'tasks', task: ID }, 'a task opens in the task list');
  assert.deepEqual(readLink(`#view=workers&task=${ID}`).nav, { view: 'tasks', task: ID });
  for (const v of VIEWS) assert.equal(readLink(`#view=${v}`).nav.view, v);
  assert.deepEqual(readLink('#view=admin&task=../../x').nav, { view: '', task: '' }, 'unknown views and malformed ids are dropped');
  assert.deepEqual(readLink(''), { cfg: {}, nav: { view: '', task: '' } });
});

test('navFragment names the queue and the view, never a credential', () => {
  const cfg = { endpoint: 'http://127.0.0.1:9000', bucket: 'jobs', region: 'us-east-1', ak: 'AK', sk: 'SK', st: 'ST', exp: '2030-01-01T00:00:00Z' };
  const frag = navFragment(cfg, { view: 'tasks', task: ID });
  assert.equal(frag, `#endpoint=http://127.0.0.1:9000&bucket=jobs&region=us-east-1&view=tasks&task=${ID}`);
  for (const secret of ['AK', 'SK', 'ST', 'exp']) assert.ok(!frag.includes(secret), secret);
  assert.equal(navFragment({ api: '/', token: 'T' }, { view: 'overview' }), '#api=/&view=overview');
  assert.equal(navFragment({ bucket: 'a&b=c' }), '#bucket=a%26b%3Dc&view=overview');
  // What the page writes, it reads back.
  const back = readLink(frag);
  assert.deepEqual(back.nav, { view: 'tasks', task: ID });
  assert.deepEqual(back.cfg, { endpoint: cfg.endpoint, bucket: 'jobs', region: 'us-east-1' });
  assert.equal(readLink(navFragment({ bucket: 'a&b=c' })).cfg.bucket, 'a&b=c');
});

test('isNavigation: a fragment without credentials for the same queue moves within the page', () => {
  const cfg = { endpoint: 'http://s3', bucket: 'jobs', ak: 'A', sk: 'S' };
  assert.ok(isNavigation({}, cfg), 'only a view or a task');
  assert.ok(isNavigation({ endpoint: 'http://s3', bucket: 'jobs' }, cfg), 'the address the page wrote');
  assert.ok(!isNavigation({ bucket: 'other' }, cfg), 'another bucket is a new link');
  assert.ok(!isNavigation({ bucket: 'jobs', ak: 'A2', sk: 'S2' }, cfg), 'new credentials are a new link');
  assert.ok(isNavigation({ api: '/' }, { api: '/', token: 'T' }), 'a pasted API link keeps the token in memory');
  assert.ok(!isNavigation({ api: '/', token: 'T2' }, { api: '/', token: 'T' }));
});
