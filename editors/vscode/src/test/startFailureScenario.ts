// Run as a separate process by extension.test.ts: activates the extension with
// a `bat` that exits before initializing, and prints what the user was shown.
// A child process keeps the client library's own unhandled rejections (which
// VS Code merely logs) out of the test runner.

import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { installVscodeMock } from './vscodeMock';

async function main(): Promise<void> {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'bat-start-failure-'));
  const argsFile = path.join(root, 'args.txt');
  const brokenBat = path.join(root, 'bat');
  await fs.writeFile(brokenBat, `#!/bin/sh\necho "$@" >> '${argsFile}'\nexit 3\n`, { mode: 0o755 });

  const mock = installVscodeMock(root);
  mock.settings.set('bat.path', brokenBat);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const extension = require(process.env.BAT_EXTENSION_MODULE ?? '../extension') as {
    activate(context: { subscriptions: unknown[] }): Promise<void>;
    deactivate(): Promise<void>;
  };
  await extension.activate({ subscriptions: [] });
  // Give a wrongly restarting client time to start the binary again.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  await extension.deactivate();

  const starts = (await fs.readFile(argsFile, 'utf8')).split('\n').filter((line) => line !== '');
  process.stdout.write(
    JSON.stringify({ executable: brokenBat, starts, errors: mock.recorded.errors.map((e) => e.message) }),
  );
  await fs.rm(root, { recursive: true, force: true });
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
