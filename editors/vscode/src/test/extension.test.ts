// Activates the real extension module against a mocked `vscode` API.
// BAT_EXTENSION_MODULE selects another build of it, such as the esbuild bundle
// taken out of the packaged .vsix (scripts/test.sh does that).

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, promises as fs, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { NOT_FOUND_MESSAGE } from '../binaryLookup';
import { EXTENSION_ROOT } from './grammarHarness';
import { installVscodeMock, VscodeMock } from './vscodeMock';

type ExtensionModule = {
  activate(context: { subscriptions: unknown[] }): Promise<void>;
  deactivate(): Promise<void>;
};

/** Waits until `condition` holds (the extension reacts asynchronously). */
async function eventually(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('extension activation', { skip: process.platform === 'win32' }, () => {
  let root: string;
  let mock: VscodeMock;
  let extension: ExtensionModule;

  let fakeBat: string;
  let logFile: string;
  const serverLog = () =>
    existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n').filter((line) => line !== '') : [];

  before(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'bat-extension-'));
    // A stand-in `bat` that runs the fake LSP server with the given arguments.
    logFile = path.join(root, 'server.log');
    process.env.FAKE_LSP_LOG = logFile;
    fakeBat = path.join(root, 'fake-bat');
    const server = path.join(EXTENSION_ROOT, 'test', 'fixtures', 'fakeLspServer.js');
    await fs.writeFile(fakeBat, `#!/bin/sh\nexec '${process.execPath}' '${server}' "$@"\n`, { mode: 0o755 });
    mock = installVscodeMock(root);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    extension = require(process.env.BAT_EXTENSION_MODULE ?? '../extension') as ExtensionModule;
  });

  after(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  test('a missing binary shows the install hint and opens the setting on request', async () => {
    assert.deepEqual(mock.recorded.unhandledRejections, []);
    const missing = path.join(root, 'missing', 'bat');
    mock.settings.set('bat.path', missing);
    mock.errorChoice = 'Open Settings';
    const context = { subscriptions: [] as unknown[] };
    await extension.activate(context);

    await eventually(() => mock.recorded.errors.length === 1, 'the not-found message');
    const [error] = mock.recorded.errors;
    assert.ok(error.message.startsWith(NOT_FOUND_MESSAGE), error.message);
    assert.ok(error.message.includes(`${missing} does not exist`), error.message);
    assert.deepEqual(error.items, ['Open Settings']);
    await eventually(() => mock.recorded.executedCommands.length === 1, 'the settings command');
    assert.deepEqual(mock.recorded.executedCommands[0], {
      command: 'workbench.action.openSettings',
      args: ['bat.path'],
    });
    assert.ok(context.subscriptions.length >= 3, 'command, listener and channel are disposed on deactivate');
    assert.ok(mock.commands.has('bat.restartServer'));
  });

  test('changing bat.path looks the binary up again; other settings do not', async () => {
    mock.errorChoice = undefined;
    const before = mock.recorded.errors.length;
    mock.fireConfigurationChange('editor.fontSize');
    mock.fireConfigurationChange('bat.trace.server');
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(mock.recorded.errors.length, before, 'unrelated changes must not restart');

    const otherMissing = path.join(root, 'elsewhere', 'bat');
    mock.settings.set('bat.path', otherMissing);
    mock.fireConfigurationChange('bat.path');
    await eventually(() => mock.recorded.errors.length === before + 1, 'a second lookup');
    assert.ok(mock.recorded.errors[before].message.includes(otherMissing));
  });

  test('bat.restartServer looks the binary up again', async () => {
    const before = mock.recorded.errors.length;
    await mock.commands.get('bat.restartServer')!();
    await eventually(() => mock.recorded.errors.length === before + 1, 'the restart lookup');
  });

  test('a found binary is started as `<bat.path> lsp` and initialized', async () => {
    const errorsBefore = mock.recorded.errors.length;
    mock.settings.set('bat.trace.server', 'messages');
    mock.settings.set('bat.path', fakeBat);
    mock.fireConfigurationChange('bat.path');

    await eventually(() => serverLog().includes('method initialized'), 'the initialized notification');
    assert.deepEqual(serverLog(), ['argv lsp', 'method initialize', 'trace messages', 'method initialized']);
    assert.equal(mock.recorded.errors.length, errorsBefore, mock.recorded.errors.map((e) => e.message).join('\n'));
    assert.ok(mock.recorded.outputLines.some((line) => line.includes(`Starting ${fakeBat} lsp`)));
  });

  test('bat.trace.server changes reach the running server without a restart', async () => {
    await fs.writeFile(logFile, '');
    mock.settings.set('bat.trace.server', 'off');
    mock.fireConfigurationChange('bat.trace.server');
    await eventually(() => serverLog().includes('trace off'), 'the $/setTrace notification');
    assert.deepEqual(serverLog(), ['method $/setTrace', 'trace off']);
  });

  test('bat.restartServer shuts the running server down before starting a new one', async () => {
    await fs.writeFile(logFile, '');
    await mock.commands.get('bat.restartServer')!();
    await eventually(() => serverLog().includes('method initialized'), 'the second start');
    assert.deepEqual(serverLog(), [
      'method shutdown',
      'method exit',
      'argv lsp',
      'method initialize',
      'trace off',
      'method initialized',
    ]);
  });

  test('deactivate shuts the server down', async () => {
    await fs.writeFile(logFile, '');
    await extension.deactivate();
    await eventually(() => serverLog().includes('method exit'), 'the exit notification');
    assert.deepEqual(serverLog(), ['method shutdown', 'method exit']);
    assert.deepEqual(mock.recorded.unhandledRejections, []);
  });
});

describe('a bat that exits before initializing', { skip: process.platform === 'win32' }, () => {
  test('is started once and reported with a hint about the wrong binary', () => {
    const output = execFileSync(process.execPath, [path.join(__dirname, 'startFailureScenario.js')], {
      encoding: 'utf8',
      env: process.env,
      timeout: 30_000,
    });
    const result = JSON.parse(output) as { executable: string; starts: string[]; errors: string[] };
    assert.deepEqual(result.starts, ['lsp'], 'started once, with the lsp subcommand, not restarted');
    const ours = result.errors.filter((message) => message.startsWith('bat language server failed to start'));
    assert.equal(ours.length, 1, result.errors.join('\n'));
    assert.ok(ours[0].includes(`(${result.executable} lsp)`), ours[0]);
    assert.ok(ours[0].includes('set bat.path'), ours[0]);
  });
});
