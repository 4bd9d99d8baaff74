// VS Code entry point: starts `<bat.path> lsp` as a language server over stdio.

import * as os from 'node:os';
import * as vscode from 'vscode';
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
} from 'vscode-languageclient/node';
import { findBatBinary, NOT_FOUND_MESSAGE } from './binaryLookup';
import { RestartPolicy } from './restartPolicy';

// The client id also names the trace setting: `bat.trace.server`.
const CLIENT_ID = 'bat';
// Not 'bat': VS Code's built-in Windows Batch support already owns that id
// (for .bat and .cmd files), and sharing it would mix the two languages.
const LANGUAGE_ID = 'stan';
const CLIENT_NAME = 'bat Language Server';
const OPEN_SETTINGS = 'Open Settings';
const STOP_TIMEOUT_MS = 2000;

let controller: ServerController | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel(CLIENT_NAME);
  controller = new ServerController(output);
  context.subscriptions.push(
    output,
    vscode.commands.registerCommand('bat.restartServer', () => controller?.restart()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      // bat.trace.server is read live by the client itself; only the binary needs a restart.
      if (event.affectsConfiguration('bat.path')) {
        void controller?.restart();
      }
    }),
  );
  await controller.start();
}

export async function deactivate(): Promise<void> {
  await controller?.stop();
  controller = undefined;
}

/** Owns the language client; start/stop/restart requests run one at a time. */
class ServerController {
  private client: LanguageClient | undefined;
  private watcher: vscode.FileSystemWatcher | undefined;
  private queue: Promise<void> = Promise.resolve();

  constructor(private readonly output: vscode.OutputChannel) {}

  start(): Promise<void> {
    return this.enqueue(() => this.startNow());
  }

  stop(): Promise<void> {
    return this.enqueue(() => this.stopNow());
  }

  restart(): Promise<void> {
    return this.enqueue(async () => {
      await this.stopNow();
      await this.startNow();
    });
  }

  private enqueue(task: () => Promise<void>): Promise<void> {
    this.queue = this.queue.then(task, task);
    return this.queue;
  }

  private async startNow(): Promise<void> {
    const configured = vscode.workspace.getConfiguration('bat').get<string>('path', 'bat');
    const lookup = await findBatBinary(configured, {
      platform: process.platform,
      pathVariable: process.env.PATH,
      pathExtVariable: process.env.PATHEXT,
      homeDir: os.homedir(),
      baseDir: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
      cargoHome: process.env.CARGO_HOME,
    });
    if (!lookup.found) {
      this.output.appendLine(`${NOT_FOUND_MESSAGE} (${lookup.reason})`);
      void showNotFound(lookup.reason);
      return;
    }

    this.output.appendLine(`Starting ${lookup.executable} lsp`);
    const serverOptions: ServerOptions = {
      command: lookup.executable,
      // No `transport`: TransportKind.stdio would append `--stdio` to the
      // arguments, while `bat lsp` always speaks LSP on stdin/stdout.
      args: ['lsp'],
      options: { cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath },
    };
    // #include targets may change on disk. The client only listens to the
    // watcher; disposing it is up to us (stopNow).
    this.watcher = vscode.workspace.createFileSystemWatcher('**/*.{bat,stan}');
    let initialized = false;
    const restartPolicy = new RestartPolicy();
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: 'file', language: LANGUAGE_ID },
        { scheme: 'untitled', language: LANGUAGE_ID },
      ],
      outputChannel: this.output,
      synchronize: { fileEvents: this.watcher },
      // Retrying `initialize` against a server that failed it does not help;
      // startNow explains the failure instead of the bare protocol error.
      initializationFailedHandler: () => false,
      errorHandler: {
        // Before initialization, a write error means the server already died:
        // the close that follows ends the start, which startNow reports.
        error: (_error, _message, count) =>
          !initialized
            ? { action: ErrorAction.Continue, handled: true }
            : { action: count !== undefined && count <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown },
        closed: () =>
          restartPolicy.shouldRestart(initialized)
            ? { action: CloseAction.Restart }
            : {
                action: CloseAction.DoNotRestart,
                // A failed start is reported by startNow itself.
                handled: !initialized,
                message: initialized
                  ? 'The bat language server crashed 5 times in the last 3 minutes and will not ' +
                    'be restarted; run "bat: Restart Language Server" to try again.'
                  : undefined,
              },
      },
    };
    const client = new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
    this.client = client;
    try {
      await client.start();
      initialized = true;
    } catch (error) {
      this.output.appendLine(`Failed to start ${lookup.executable} lsp: ${describe(error)}`);
      void vscode.window.showErrorMessage(
        `bat language server failed to start (${lookup.executable} lsp): ${describe(error)}. ` +
          `If '${lookup.executable} --help' does not list 'lsp', another program named bat ` +
          `(such as the cat clone) was found: set bat.path to the bat compiler.`,
      );
    }
  }

  private async stopNow(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.watcher?.dispose();
    this.watcher = undefined;
    if (client === undefined) {
      return;
    }
    try {
      // An automatic restart may be under way: let it settle before stopping.
      if (client.state === State.Starting) {
        await settled(client, STOP_TIMEOUT_MS);
      }
      // A client whose start failed (or whose server died) has nothing to shut down.
      if (client.isRunning()) {
        await client.dispose(STOP_TIMEOUT_MS);
      }
    } catch (error) {
      this.output.appendLine(`Error while stopping the server: ${describe(error)}`);
    }
  }
}

async function showNotFound(reason: string): Promise<void> {
  const choice = await vscode.window.showErrorMessage(
    `${NOT_FOUND_MESSAGE} (${reason})`,
    OPEN_SETTINGS,
  );
  if (choice === OPEN_SETTINGS) {
    await vscode.commands.executeCommand('workbench.action.openSettings', 'bat.path');
  }
}

/** Resolves once the client leaves the Starting state, or after `timeoutMs`. */
function settled(client: LanguageClient, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, timeoutMs);
    const listener = client.onDidChangeState((change) => {
      if (change.newState !== State.Starting) {
        done();
      }
    });
    function done() {
      clearTimeout(timer);
      listener.dispose();
      resolve();
    }
  });
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
