// Loads syntaxes/bat.tmLanguage.json with the same engine VS Code uses
// (vscode-textmate + the oniguruma WebAssembly build) for tests.

import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import * as oniguruma from 'vscode-oniguruma';
import * as textmate from 'vscode-textmate';

export const EXTENSION_ROOT = path.resolve(__dirname, '..', '..');
const GRAMMAR_PATH = path.join(EXTENSION_ROOT, 'syntaxes', 'bat.tmLanguage.json');
const MARKDOWN_INJECTION_PATH = path.join(EXTENSION_ROOT, 'syntaxes', 'bat.markdown.tmLanguage.json');
/** Stands in for VS Code's Markdown grammar, which only hosts the injection here. */
const MARKDOWN_HOST = JSON.stringify({ scopeName: 'text.html.markdown', patterns: [] });

export interface Token {
  text: string;
  scopes: string[];
}

export interface TokenizedLine {
  tokens: Token[];
  /** Depth of the rule stack after the line: 1 means no construct is left open. */
  depthAfter: number;
}

let registryPromise: Promise<textmate.Registry> | undefined;
const grammars = new Map<string, Promise<textmate.IGrammar>>();

async function createRegistry(): Promise<textmate.Registry> {
  const wasm = readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  return new textmate.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns: string[]) => new oniguruma.OnigScanner(patterns),
      createOnigString: (text: string) => new oniguruma.OnigString(text),
    }),
    loadGrammar: async (scopeName: string) => {
      switch (scopeName) {
        case 'source.bat':
          return textmate.parseRawGrammar(readFileSync(GRAMMAR_PATH, 'utf8'), GRAMMAR_PATH);
        case 'markdown.bat.codeblock':
          return textmate.parseRawGrammar(readFileSync(MARKDOWN_INJECTION_PATH, 'utf8'), MARKDOWN_INJECTION_PATH);
        case 'text.html.markdown':
          return textmate.parseRawGrammar(MARKDOWN_HOST, 'markdown.json');
        default:
          return null;
      }
    },
    getInjections: (scopeName: string) =>
      scopeName === 'text.html.markdown' ? ['markdown.bat.codeblock'] : undefined,
  });
}

/** The grammar for `scopeName` (source.bat unless told otherwise). */
export function loadGrammar(scopeName = 'source.bat'): Promise<textmate.IGrammar> {
  let grammar = grammars.get(scopeName);
  if (grammar === undefined) {
    grammar = (async () => {
      registryPromise ??= createRegistry();
      const loaded = await (await registryPromise).loadGrammar(scopeName);
      if (loaded === null) throw new Error(`could not load the grammar ${scopeName}`);
      return loaded;
    })();
    grammars.set(scopeName, grammar);
  }
  return grammar;
}

/** Tokenizes a whole document line by line, carrying the rule stack across lines. */
export async function tokenize(source: string, scopeName = 'source.bat'): Promise<TokenizedLine[]> {
  const grammar = await loadGrammar(scopeName);
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
