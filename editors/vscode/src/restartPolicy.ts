// Decides whether a server whose connection closed unexpectedly is restarted.
// Free of `vscode` imports so that it can be unit-tested in plain Node.

export class RestartPolicy {
  private restarts: number[] = [];

  constructor(
    private readonly maxRestarts = 4,
    private readonly windowMs = 3 * 60 * 1000,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * `initialized` tells whether the server ever answered `initialize`: one
   * that died before that (wrong binary, no `lsp` subcommand) would only fail
   * the same way again, so it is not restarted. A crash after a successful
   * start is restarted at most `maxRestarts` times within `windowMs`.
   */
  shouldRestart(initialized: boolean): boolean {
    if (!initialized) {
      return false;
    }
    const time = this.now();
    this.restarts = this.restarts.filter((restart) => time - restart < this.windowMs);
    if (this.restarts.length >= this.maxRestarts) {
      return false;
    }
    this.restarts.push(time);
    return true;
  }
}
