// A stand-in for the `vscode` module, enough to activate the extension in
// plain Node: it records what the extension shows and runs, and answers every
// API the language client touches with inert stubs.

import Module from 'node:module';

export interface Recorded {
  errors: Array<{ message: string; items: string[] }>;
  /** Rejections nobody handled (the extension host logs these; Node would exit). */
  unhandledRejections: string[];
  executedCommands: Array<{ command: string; args: unknown[] }>;
  outputLines: string[];
}

export interface VscodeMock {
  recorded: Recorded;
  settings: Map<string, unknown>;
  commands: Map<string, (...args: unknown[]) => unknown>;
  /** The answer the next error message "clicks" (undefined: dismissed). */
  errorChoice: string | undefined;
  fireConfigurationChange(changedSection: string): void;
  workspaceFolder: string;
}

/** A callable, constructible object whose every property is another stub. */
function stub(): unknown {
  const target = function () {
    /* stub */
  };
  return new Proxy(target, {
    get(_target, property) {
      if (property === 'then') return undefined; // not a promise
      if (property === Symbol.toPrimitive) return () => '';
      if (property === 'dispose') return () => undefined;
      return stub();
    },
    apply: () => stub(),
    construct: () => stub() as object,
  });
}

export function installVscodeMock(workspaceFolder: string): VscodeMock {
  const configurationListeners: Array<(event: unknown) => void> = [];
  const mock: VscodeMock = {
    recorded: { errors: [], executedCommands: [], outputLines: [], unhandledRejections: [] },
    settings: new Map(),
    commands: new Map(),
    errorChoice: undefined,
    workspaceFolder,
    fireConfigurationChange(changedSection: string) {
      const event = {
        affectsConfiguration: (section: string) =>
          changedSection === section || changedSection.startsWith(`${section}.`),
      };
      configurationListeners.forEach((listener) => listener(event));
    },
  };
  const disposable = { dispose: () => undefined };

  const api: Record<string, unknown> = {
    // The language client refuses to start on an unknown VS Code version.
    version: '1.82.0',
    window: {
      createOutputChannel: (name: string) => ({
        name,
        append: (text: string) => mock.recorded.outputLines.push(text),
        appendLine: (text: string) => mock.recorded.outputLines.push(text),
        replace: () => undefined,
        clear: () => undefined,
        show: () => undefined,
        hide: () => undefined,
        dispose: () => undefined,
      }),
      showErrorMessage: async (message: string, ...items: unknown[]) => {
        mock.recorded.errors.push({ message, items: items.filter((item) => typeof item === 'string') as string[] });
        return mock.errorChoice;
      },
    },
    commands: {
      registerCommand: (command: string, callback: (...args: unknown[]) => unknown) => {
        mock.commands.set(command, callback);
        return disposable;
      },
      executeCommand: async (command: string, ...args: unknown[]) => {
        mock.recorded.executedCommands.push({ command, args });
        return undefined;
      },
    },
    workspace: {
      get workspaceFolders() {
        return [{ uri: { fsPath: mock.workspaceFolder }, name: 'ws', index: 0 }];
      },
      getConfiguration: (section?: string) => ({
        get: (key: string, fallback?: unknown) => {
          const full = section ? `${section}.${key}` : key;
          return mock.settings.has(full) ? mock.settings.get(full) : fallback;
        },
        has: (key: string) => mock.settings.has(section ? `${section}.${key}` : key),
        inspect: () => undefined,
        update: async () => undefined,
      }),
      onDidChangeConfiguration: (listener: (event: unknown) => void) => {
        configurationListeners.push(listener);
        return disposable;
      },
    },
  };
  const vscode = new Proxy(api, {
    get(target, property: string) {
      if (property in target) {
        const value = target[property];
        if (typeof value === 'object' && value !== null) {
          // Known namespaces: listed members, stubs for the rest.
          return new Proxy(value as Record<string, unknown>, {
            get: (inner, member: string) => (member in inner ? inner[member] : stub()),
          });
        }
        return value;
      }
      if (property === 'then' || property === '__esModule') return undefined;
      return stub();
    },
  });

  // vscode-languageclient 9 leaves some rejections of a failed start unhandled
  // (its own `void this.stop()` while starting); VS Code only logs them.
  process.on('unhandledRejection', (reason) => {
    mock.recorded.unhandledRejections.push(reason instanceof Error ? reason.message : String(reason));
  });

  const moduleInternals = Module as unknown as {
    _load: (request: string, parent: unknown, isMain: boolean) => unknown;
  };
  const originalLoad = moduleInternals._load;
  moduleInternals._load = function (request: string, parent: unknown, isMain: boolean) {
    return request === 'vscode' ? vscode : originalLoad.call(this, request, parent, isMain);
  };
  return mock;
}
