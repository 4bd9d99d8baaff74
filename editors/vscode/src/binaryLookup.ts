// Finds the `bat` executable named by the `bat.path` setting.
//
// Deliberately free of any `vscode` import so that it can be unit-tested with
// the plain Node test runner.

import { constants as fsConstants, promises as fs } from 'node:fs';
import * as path from 'node:path';

/** Everything the lookup depends on, injectable for tests. */
export interface LookupEnvironment {
  /** `process.platform`; Windows resolves `PATHEXT` and has no execute bit. */
  platform: NodeJS.Platform;
  /** Value of the `PATH` environment variable (may be undefined). */
  pathVariable: string | undefined;
  /** Value of `PATHEXT` (Windows only). */
  pathExtVariable?: string | undefined;
  /** Home directory, used to expand a leading `~`. */
  homeDir: string;
  /** Directory that relative paths such as `./target/debug/bat` are resolved against. */
  baseDir?: string | undefined;
  /** `CARGO_HOME`; `cargo install` puts binaries in its `bin` (default `~/.cargo/bin`). */
  cargoHome?: string | undefined;
}

export type LookupResult =
  | { found: true; executable: string }
  | { found: false; reason: string };

/** The message shown to the user when no usable binary exists. */
export const NOT_FOUND_MESSAGE =
  'bat binary not found: set bat.path or install bat: cargo install --path .';

const DEFAULT_WINDOWS_PATHEXT = '.COM;.EXE;.BAT;.CMD';

/**
 * Resolves the configured binary to an absolute path of an executable file.
 *
 * A bare name (no path separator) is searched on PATH, like a shell would.
 * Anything containing a separator is treated as a path: `~` is expanded and a
 * relative path is resolved against `baseDir` (the workspace folder).
 */
export async function findBatBinary(
  configured: string,
  env: LookupEnvironment,
): Promise<LookupResult> {
  const command = configured.trim();
  if (command === '') {
    return { found: false, reason: 'bat.path is empty' };
  }

  const expanded = expandHome(command, env.homeDir);
  if (looksLikePath(expanded, env.platform)) {
    const absolute = path.isAbsolute(expanded)
      ? expanded
      : path.resolve(env.baseDir ?? process.cwd(), expanded);
    let reason = `${absolute} does not exist`;
    for (const candidate of withExecutableExtensions(absolute, env)) {
      const problem = await executableProblem(candidate, env.platform);
      if (problem === undefined) {
        return { found: true, executable: candidate };
      }
      if (problem !== 'does not exist') {
        reason = `${candidate} ${problem}`;
      }
    }
    return { found: false, reason };
  }

  // A bare name is searched on PATH. VS Code started from a desktop launcher
  // often lacks cargo's bin directory on PATH, so for a bare name that is also
  // where `cargo install --path .` puts the binary is tried last.
  const directories = splitPathVariable(env.pathVariable, env.platform);
  const cargoBin = path.join(env.cargoHome || path.join(env.homeDir, '.cargo'), 'bin');
  for (const directory of [...directories, cargoBin]) {
    for (const candidate of withExecutableExtensions(path.join(directory, expanded), env)) {
      if ((await executableProblem(candidate, env.platform)) === undefined) {
        return { found: true, executable: candidate };
      }
    }
  }
  return {
    found: false,
    reason: `'${command}' was not found on PATH (${directories.length} directories searched) nor in ${cargoBin}`,
  };
}

/** Expands a leading `~` or `~/` to the home directory. */
export function expandHome(command: string, homeDir: string): string {
  if (command === '~') {
    return homeDir;
  }
  if (command.startsWith('~/') || command.startsWith('~\\')) {
    return path.join(homeDir, command.slice(2));
  }
  return command;
}

function looksLikePath(command: string, platform: NodeJS.Platform): boolean {
  return command.includes('/') || (platform === 'win32' && command.includes('\\'));
}

/** Splits PATH, dropping empty entries (which would mean the current directory). */
export function splitPathVariable(
  pathVariable: string | undefined,
  platform: NodeJS.Platform,
): string[] {
  const delimiter = platform === 'win32' ? ';' : ':';
  return (pathVariable ?? '')
    .split(delimiter)
    .map((entry) => entry.trim().replace(/^"(.*)"$/, '$1'))
    .filter((entry) => entry !== '');
}

/**
 * On Windows a name without extension is run as `bat.exe` (PATHEXT order), as
 * the shell would; elsewhere the name is used as is.
 */
function withExecutableExtensions(candidate: string, env: LookupEnvironment): string[] {
  if (env.platform !== 'win32' || path.extname(candidate) !== '') {
    return [candidate];
  }
  const extensions = (env.pathExtVariable ?? DEFAULT_WINDOWS_PATHEXT)
    .split(';')
    .filter((extension) => extension !== '');
  return extensions.map((extension) => candidate + extension.toLowerCase());
}

/** Returns why `candidate` cannot be executed, or undefined when it can. */
async function executableProblem(
  candidate: string,
  platform: NodeJS.Platform,
): Promise<string | undefined> {
  let stats;
  try {
    stats = await fs.stat(candidate);
  } catch {
    return 'does not exist';
  }
  if (!stats.isFile()) {
    return 'is not a file';
  }
  if (platform === 'win32') {
    return undefined;
  }
  try {
    await fs.access(candidate, fsConstants.X_OK);
    return undefined;
  } catch {
    return 'is not executable';
  }
}
