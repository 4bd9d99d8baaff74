// Loads syntaxes/bat.tmLanguage.json with the same engine VS Code uses
// (vscode-textmate + the oniguruma WebAssembly build) for tests.

import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import * as oniguruma from 'vscode-oniguruma';
import * as textmate from 'vscode-textmate';

export const EXTENSION_ROOT = path.resolve(__dirname, '..', '..');
const GRAMMAR_PATH = path.join(EXTENSION_ROOT, 'syntaxes', 'bat.tmLanguage.json');

export interface Token {
  text: string;
  scopes: string[];
}

export interface TokenizedLine {
  tokens: Token[];
  /** Depth of the rule stack after the line: 1 means no construct is left open. */
  depthAfter: number;
}

let grammarPromise: Promise<textmate.IGrammar> | undefined;

export function loadGrammar(): Promise<textmate.IGrammar> {
  grammarPromise ??= createGrammar();
  return grammarPromise;
}

async function createGrammar(): Promise<textmate.IGrammar> {
  const wasm = readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new textmate.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns: string[]) => new oniguruma.OnigScanner(patterns),
      createOnigString: (text: string) => new oniguruma.OnigString(text),
    }),
    loadGrammar: async (scopeName: string) =>
      scopeName === 'source.bat'
        ? textmate.parseRawGrammar(readFileSync(GRAMMAR_PATH, 'utf8'), GRAMMAR_PATH)
        : null,
  });
  const grammar = await registry.loadGrammar('source.bat');
  if (grammar === null) {
    throw new Error(`could not load ${GRAMMAR_PATH}`);
  }
  return grammar;
}

/** Tokenizes a whole document line by line, carrying the rule stack across lines. */
export async function tokenize(source: string): Promise<TokenizedLine[]> {
  const grammar = await loadGrammar();
  let stack = textmate.INITIAL;
  return source.split(/\r?\n/).map((line) => {
    const result = grammar.tokenizeLine(line, stack);
    stack = result.ruleStack;
    return {
      tokens: result.tokens.map((token) => ({
        text: line.slice(token.startIndex, token.endIndex),
        scopes: token.scopes,
      })),
      depthAfter: (stack as unknown as { depth: number }).depth,
    };
  });
}

/** Scopes of the `occurrence`-th token whose text is exactly `text`. */
export async function scopesOfToken(
  source: string,
  text: string,
  occurrence = 1,
): Promise<string[]> {
  let seen = 0;
  for (const line of await tokenize(source)) {
    for (const token of line.tokens) {
      if (token.text === text && ++seen === occurrence) {
        return token.scopes;
      }
    }
  }
  throw new Error(`token ${JSON.stringify(text)} #${occurrence} not found in ${JSON.stringify(source)}`);
}
