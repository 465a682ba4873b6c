// The page refuses to run framed (src/frame.js): framed() tells a frame,
// a cross-origin top included.
import { test } from 'node:test';
import assert from 'node:assert/strict';

globalThis.window = globalThis;
const { framed } = await import('../src/frame.js');

test('framed tells a page in a frame from one in its own tab', () => {
  const top = {};
  top.top = top;
  top.self = top;
  assert.equal(framed(top), false);
  assert.equal(framed({ top, self: {} }), true);
  const crossOrigin = { self: {} };
  Object.defineProperty(crossOrigin, 'top', { get() { throw new Error('SecurityError'); } });
  assert.equal(framed(crossOrigin), true, 'a top the page may not read is another site');
});
