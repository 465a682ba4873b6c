// The overview's fleet-wide limits column (control.json "limits", read
// from the bucket or through /api/control alike).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { limitText, limitsText } from '../src/queue.js';

test('limitText shows a cap, a rate and both', () => {
  const cases = [
    [{ concurrency: 5, set_at: '2026-01-01T00:00:00Z' }, 'at most 5 running'],
    [{ concurrency: 0, rate: 20, per: 's', set_at: '2026-01-01T00:00:00Z' }, '20/s'],
    [{ rate: 600, per: 'm', burst: 40 }, '600/m (burst 40)'],
    [{ concurrency: 3, rate: 10, per: 's', burst: 2 }, 'at most 3 running, 10/s (burst 2)'],
  ];
  for (const [limit, want] of cases) assert.equal(limitText(limit), want, JSON.stringify(limit));
});

test('limitText shows nothing for no limit or a malformed one', () => {
  for (const limit of [undefined, null, 'x', {}, { concurrency: -1 }, { concurrency: 2.5 }, { rate: 10 }, { rate: 10, per: 'h' }, { rate: '10', per: 's' }]) {
    assert.equal(limitText(limit), '', JSON.stringify(limit));
  }
});

test('limitsText shows the fleet-wide limit, then the per-key one', () => {
  const cases = [
    [{ concurrency: 5 }, undefined, 'at most 5 running'],
    [undefined, { concurrency: 3, rate: 10, per: 's' }, 'per key: at most 3 running, 10/s'],
    [{ rate: 20, per: 's', burst: 2 }, { rate: 600, per: 'm' }, '20/s (burst 2); per key: 600/m'],
    [undefined, { concurrency: -1 }, ''],
    [undefined, undefined, ''],
  ];
  for (const [fleet, perKey, want] of cases) assert.equal(limitsText(fleet, perKey), want, JSON.stringify([fleet, perKey]));
});
