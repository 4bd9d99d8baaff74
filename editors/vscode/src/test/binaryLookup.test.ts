import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  expandHome,
  findBatBinary,
  LookupEnvironment,
  NOT_FOUND_MESSAGE,
  splitPathVariable,
} from '../binaryLookup';

// The execute bit only exists on POSIX (root also needs one x bit set: access(2)).
const posix = process.platform !== 'win32';

describe('findBatBinary', () => {
  let root: string;
  let firstBin: string;
  let secondBin: string;
  let emptyBin: string;

  before(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'bat-lookup-'));
    firstBin = path.join(root, 'first');
    secondBin = path.join(root, 'second');
    emptyBin = path.join(root, 'empty');
    await Promise.all([firstBin, secondBin, emptyBin].map((dir) => fs.mkdir(dir)));
    await writeExecutable(path.join(firstBin, 'bat'));
    await writeExecutable(path.join(secondBin, 'bat'));
    await fs.writeFile(path.join(root, 'not-executable'), '#!/bin/sh\n', { mode: 0o644 });
    await fs.mkdir(path.join(root, 'a-directory'));
    await fs.mkdir(path.join(root, 'home', 'tools'), { recursive: true });
    await writeExecutable(path.join(root, 'home', 'tools', 'bat'));
  });

  after(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  function env(overrides: Partial<LookupEnvironment> = {}): LookupEnvironment {
    return {
      platform: 'linux',
      pathVariable: [emptyBin, firstBin, secondBin].join(':'),
      homeDir: path.join(root, 'home'),
      baseDir: root,
      ...overrides,
    };
  }

  test('finds a bare name in the first PATH directory that has it', async () => {
    const result = await findBatBinary('bat', env());
    assert.deepEqual(result, { found: true, executable: path.join(firstBin, 'bat') });
  });

  test('respects PATH order', async () => {
    const result = await findBatBinary('bat', env({ pathVariable: `${secondBin}:${firstBin}` }));
    assert.deepEqual(result, { found: true, executable: path.join(secondBin, 'bat') });
  });

  test('reports a bare name missing from PATH and from cargo bin', async () => {
    const result = await findBatBinary('bat', env({ pathVariable: emptyBin }));
    assert.equal(result.found, false);
    const cargoBin = path.join(root, 'home', '.cargo', 'bin');
    assert.equal(
      !result.found ? result.reason : '',
      `'bat' was not found on PATH (1 directories searched) nor in ${cargoBin}`,
    );
  });

  test('falls back to ~/.cargo/bin, where cargo install puts bat', async () => {
    const cargoBin = path.join(root, 'home', '.cargo', 'bin');
    await fs.mkdir(cargoBin, { recursive: true });
    await writeExecutable(path.join(cargoBin, 'bat'));
    try {
      assert.deepEqual(await findBatBinary('bat', env({ pathVariable: emptyBin })), {
        found: true,
        executable: path.join(cargoBin, 'bat'),
      });
      // PATH still comes first.
      assert.deepEqual(await findBatBinary('bat', env()), {
        found: true,
        executable: path.join(firstBin, 'bat'),
      });
    } finally {
      await fs.rm(path.join(root, 'home', '.cargo'), { recursive: true });
    }
  });

  test('uses CARGO_HOME when it is set', async () => {
    const cargoHome = path.join(root, 'custom-cargo');
    await fs.mkdir(path.join(cargoHome, 'bin'), { recursive: true });
    await writeExecutable(path.join(cargoHome, 'bin', 'bat'));
    assert.deepEqual(await findBatBinary('bat', env({ pathVariable: emptyBin, cargoHome })), {
      found: true,
      executable: path.join(cargoHome, 'bin', 'bat'),
    });
  });

  test('treats an unset PATH as empty', async () => {
    const result = await findBatBinary('bat', env({ pathVariable: undefined }));
    assert.equal(result.found, false);
  });

  test('ignores empty PATH entries instead of searching the working directory', async () => {
    const result = await findBatBinary('bat', env({ pathVariable: `::${emptyBin}:` }));
    assert.equal(result.found, false);
  });

  test('accepts an absolute path to an executable', async () => {
    const absolute = path.join(secondBin, 'bat');
    assert.deepEqual(await findBatBinary(absolute, env()), { found: true, executable: absolute });
  });

  test('trims surrounding whitespace from the setting', async () => {
    const absolute = path.join(secondBin, 'bat');
    assert.deepEqual(await findBatBinary(`  ${absolute}\n`, env()), {
      found: true,
      executable: absolute,
    });
  });

  test('resolves a relative path against the workspace folder', async () => {
    const result = await findBatBinary('./second/bat', env());
    assert.deepEqual(result, { found: true, executable: path.join(secondBin, 'bat') });
  });

  test('expands ~ to the home directory', async () => {
    const result = await findBatBinary('~/tools/bat', env());
    assert.deepEqual(result, { found: true, executable: path.join(root, 'home', 'tools', 'bat') });
  });

  test('rejects an absolute path that does not exist', async () => {
    const missing = path.join(root, 'nowhere', 'bat');
    assert.deepEqual(await findBatBinary(missing, env()), {
      found: false,
      reason: `${missing} does not exist`,
    });
  });

  test('rejects a directory', async () => {
    const directory = path.join(root, 'a-directory');
    assert.deepEqual(await findBatBinary(directory, env()), {
      found: false,
      reason: `${directory} is not a file`,
    });
  });

  test('rejects a file without the execute bit', { skip: !posix }, async () => {
    const file = path.join(root, 'not-executable');
    assert.deepEqual(await findBatBinary(file, env()), {
      found: false,
      reason: `${file} is not executable`,
    });
  });

  test('skips PATH entries whose bat is not executable', { skip: !posix }, async () => {
    const noExec = path.join(root, 'noexec-dir');
    await fs.mkdir(noExec);
    await fs.writeFile(path.join(noExec, 'bat'), '#!/bin/sh\n', { mode: 0o644 });
    const result = await findBatBinary('bat', env({ pathVariable: `${noExec}:${secondBin}` }));
    assert.deepEqual(result, { found: true, executable: path.join(secondBin, 'bat') });
  });

  test('rejects an empty setting', async () => {
    assert.deepEqual(await findBatBinary('   ', env()), {
      found: false,
      reason: 'bat.path is empty',
    });
  });

  test('on Windows tries PATHEXT extensions in order, using ";" as PATH separator', async () => {
    const windowsBin = path.join(root, 'windows');
    await fs.mkdir(windowsBin);
    await fs.writeFile(path.join(windowsBin, 'bat.cmd'), '@echo off\r\n');
    await fs.writeFile(path.join(windowsBin, 'bat.exe'), 'MZ');
    const result = await findBatBinary(
      'bat',
      env({ platform: 'win32', pathVariable: `${emptyBin};${windowsBin}`, pathExtVariable: '.EXE;.CMD' }),
    );
    assert.deepEqual(result, { found: true, executable: path.join(windowsBin, 'bat.exe') });
  });

  test('on Windows does not run an extension-less file', async () => {
    const windowsBin = path.join(root, 'windows-plain');
    await fs.mkdir(windowsBin);
    await fs.writeFile(path.join(windowsBin, 'bat'), 'not a program');
    const result = await findBatBinary(
      'bat',
      env({ platform: 'win32', pathVariable: windowsBin, pathExtVariable: '.EXE' }),
    );
    assert.equal(result.found, false);
  });
});

describe('helpers', () => {
  test('expandHome only expands a leading ~', () => {
    assert.equal(expandHome('~', '/home/u'), '/home/u');
    assert.equal(expandHome('~/bin/bat', '/home/u'), path.join('/home/u', 'bin/bat'));
    assert.equal(expandHome('/opt/~/bat', '/home/u'), '/opt/~/bat');
    assert.equal(expandHome('~other/bat', '/home/u'), '~other/bat');
  });

  test('splitPathVariable uses the platform delimiter and strips quotes', () => {
    assert.deepEqual(splitPathVariable('/a:/b::/c', 'linux'), ['/a', '/b', '/c']);
    assert.deepEqual(splitPathVariable('C:\\a;"C:\\Program Files\\b";', 'win32'), [
      'C:\\a',
      'C:\\Program Files\\b',
    ]);
  });

  test('the not-found message tells the user what to do', () => {
    assert.equal(
      NOT_FOUND_MESSAGE,
      'bat binary not found: set bat.path or install bat: cargo install --path .',
    );
  });
});

async function writeExecutable(file: string): Promise<void> {
  await fs.writeFile(file, '#!/bin/sh\nexit 0\n', { mode: 0o755 });
}

