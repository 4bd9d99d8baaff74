import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RestartPolicy } from '../restartPolicy';

describe('RestartPolicy', () => {
  test('never restarts a server that did not finish initializing', () => {
    const policy = new RestartPolicy(4, 1000, () => 0);
    assert.equal(policy.shouldRestart(false), false);
    assert.equal(policy.shouldRestart(false), false);
  });

  test('restarts a crashed server up to the limit within the window', () => {
    let time = 0;
    const policy = new RestartPolicy(2, 1000, () => time);
    assert.equal(policy.shouldRestart(true), true);
    time = 10;
    assert.equal(policy.shouldRestart(true), true);
    time = 20;
    assert.equal(policy.shouldRestart(true), false);
  });

  test('forgets crashes older than the window', () => {
    let time = 0;
    const policy = new RestartPolicy(1, 1000, () => time);
    assert.equal(policy.shouldRestart(true), true);
    time = 999;
    assert.equal(policy.shouldRestart(true), false);
    time = 1000;
    assert.equal(policy.shouldRestart(true), true);
  });
});
