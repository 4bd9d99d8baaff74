// Consistency of package.json, the language configuration and the snippets.

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { EXTENSION_ROOT, tokenize } from './grammarHarness';

const readJson = (relative: string) =>
  JSON.parse(readFileSync(path.join(EXTENSION_ROOT, relative), 'utf8'));

const manifest = readJson('package.json');
const contributes = manifest.contributes;
const languageConfiguration = readJson('language-configuration.json');
const snippets: Record<string, { prefix: string | string[]; body: string[]; description: string }> =
  readJson('snippets/bat.json');

describe('package.json', () => {
  test('one language id everywhere, and not the built-in Batch id', () => {
    const [language] = contributes.languages;
    assert.equal(language.id, 'stan');
    assert.notEqual(language.id, 'bat');
    assert.deepEqual(language.extensions, ['.bat', '.stan']);
    const languageGrammars = contributes.grammars.filter((g: { language?: string }) => g.language !== undefined);
    assert.deepEqual(languageGrammars.map((g: { language: string }) => g.language), [language.id]);
    const markdown = contributes.grammars.find((g: { injectTo?: string[] }) => g.injectTo !== undefined);
    assert.deepEqual(markdown.injectTo, ['text.html.markdown']);
    assert.deepEqual(Object.values(markdown.embeddedLanguages), [language.id]);
    assert.deepEqual(contributes.snippets.map((s: { language: string }) => s.language), [language.id]);
    assert.deepEqual(manifest.activationEvents, [`onLanguage:${language.id}`]);
    const source = readFileSync(path.join(EXTENSION_ROOT, 'src', 'extension.ts'), 'utf8');
    assert.ok(source.includes(`const LANGUAGE_ID = '${language.id}';`), 'the client selects the same language');
  });

  test('referenced files exist and the grammar scope matches', () => {
    const paths = [
      contributes.languages[0].configuration,
      ...contributes.grammars.map((g: { path: string }) => g.path),
      ...contributes.snippets.map((s: { path: string }) => s.path),
    ];
    for (const relative of paths) {
      assert.ok(existsSync(path.join(EXTENSION_ROOT, relative)), relative);
    }
    for (const contribution of contributes.grammars) {
      assert.equal(readJson(contribution.path).scopeName, contribution.scopeName, contribution.path);
    }
    assert.equal(contributes.grammars[0].scopeName, 'source.bat');
    assert.equal(manifest.main, './out/extension.js');
  });

  test('settings and commands', () => {
    const properties = contributes.configuration.properties;
    assert.equal(properties['bat.path'].type, 'string');
    assert.equal(properties['bat.path'].default, 'bat');
    assert.deepEqual(properties['bat.trace.server'].enum, ['off', 'messages', 'verbose']);
    assert.equal(properties['bat.trace.server'].default, 'off');
    assert.deepEqual(contributes.commands.map((c: { command: string }) => c.command), ['bat.restartServer']);
    assert.deepEqual(manifest.capabilities.untrustedWorkspaces.restrictedConfigurations, ['bat.path']);
  });
});

describe('language configuration', () => {
  const regex = (source: string) => new RegExp(source);

  test('folding markers open on program blocks and close on column-0 braces', () => {
    const start = regex(languageConfiguration.folding.markers.start);
    const end = regex(languageConfiguration.folding.markers.end);
    for (const header of ['functions {', 'data {', 'transformed data {', 'parameters{', 'transformed parameters {',
      'model {  // likelihood', 'generated quantities {', '// #region priors']) {
      assert.ok(start.test(header), header);
    }
    for (const line of ['real model = 1;', 'model', 'for (i in 1:N) {']) {
      assert.ok(!start.test(line), line);
    }
    assert.ok(end.test('}'));
    assert.ok(end.test('// #endregion'));
    assert.ok(!end.test('  }'));
  });

  test('indentation rules', () => {
    const increase = regex(languageConfiguration.indentationRules.increaseIndentPattern);
    const decrease = regex(languageConfiguration.indentationRules.decreaseIndentPattern);
    for (const line of ['model {', '  for (n in 1:N) {', '  target += normal_lpdf(y |', '  x = [1,']) {
      assert.ok(increase.test(line), line);
    }
    for (const line of ['  y ~ normal(0, 1);', '  z = {1, 2};', '  x = 1; // {']) {
      assert.ok(!increase.test(line), line);
    }
    assert.ok(decrease.test('  }'));
    assert.ok(decrease.test(')'));
    assert.ok(!decrease.test('  x = y[1];'));
  });

  test('word pattern selects whole identifiers and numbers', () => {
    const word = new RegExp(languageConfiguration.wordPattern, 'g');
    assert.deepEqual('sigma_2 = 1.5e-3 + .25 * theta[10];'.match(word), ['sigma_2', '1.5e-3', '.25', 'theta', '10']);
    assert.deepEqual('z = 2i;'.match(word), ['z', '2i']);
  });

  test('brackets and pairs', () => {
    assert.deepEqual(languageConfiguration.comments, { lineComment: '//', blockComment: ['/*', '*/'] });
    const opens = languageConfiguration.autoClosingPairs.map((pair: { open: string }) => pair.open);
    assert.deepEqual(opens, ['{', '[', '(', '"', '/**']);
  });
});

/** Replaces tab stops and placeholders by their default text, as accepting a snippet would. */
function expandSnippet(body: string[]): string {
  const text = body.join('\n');
  const defaults = new Map<string, string>();
  for (const match of text.matchAll(/\$\{(\d+):([^}]*)\}/g)) {
    if (!defaults.has(match[1])) defaults.set(match[1], match[2]);
  }
  return text
    .replace(/\$\{(\d+):([^}]*)\}/g, (_, _index, value: string) => value)
    .replace(/\$\{(\d+)\}|\$(\d+)/g, (_, braced?: string, bare?: string) => defaults.get(braced ?? bare ?? '') ?? '');
}

describe('snippets', () => {
  test('every snippet has a prefix, a description and a body', () => {
    assert.ok(Object.keys(snippets).length >= 20);
    for (const [name, snippet] of Object.entries(snippets)) {
      const prefixes = Array.isArray(snippet.prefix) ? snippet.prefix : [snippet.prefix];
      assert.ok(prefixes.length > 0 && prefixes.every((p) => typeof p === 'string' && p !== ''), name);
      // Completion is triggered by typing a word; a prefix must start with one.
      assert.ok(prefixes.every((p) => /^[A-Za-z]/.test(p)), `${name}: ${prefixes}`);
      assert.ok(typeof snippet.description === 'string' && snippet.description !== '', name);
      assert.ok(Array.isArray(snippet.body) && snippet.body.length > 0, name);
    }
  });

  test('the blocks, loops, function and declarations the brief asks for exist', () => {
    const prefixes = new Set(Object.values(snippets).flatMap((s) => (Array.isArray(s.prefix) ? s.prefix : [s.prefix])));
    for (const prefix of ['functions', 'data', 'transformed data', 'parameters', 'transformed parameters', 'model',
      'generated quantities', 'skeleton', 'for', 'while', 'if', 'ifelse', 'fun', 'vector', 'matrix', 'array', 'realp']) {
      assert.ok(prefixes.has(prefix), prefix);
    }
  });

  test('expanded snippets are well-formed code for the grammar', async () => {
    for (const [name, snippet] of Object.entries(snippets)) {
      const code = expandSnippet(snippet.body);
      assert.ok(!code.includes('$'), `${name}: unexpanded ${code}`);
      const lines = await tokenize(code);
      const unscoped = lines.flatMap((line) => line.tokens).filter((t) => t.text.trim() !== '' && t.scopes.length === 1);
      assert.deepEqual(unscoped, [], name);
      assert.equal(lines[lines.length - 1].depthAfter, 1, `${name} leaves a construct open`);
      const opened = (code.match(/[{([]/g) ?? []).length;
      const closed = (code.match(/[})\]]/g) ?? []).length;
      assert.equal(opened, closed, `${name} has unbalanced brackets`);
    }
  });

  test('the skeleton is a whole program', () => {
    const skeleton = expandSnippet(snippets['Model skeleton'].body);
    for (const block of ['data {', 'parameters {', 'model {', 'generated quantities {']) {
      assert.ok(skeleton.includes(block), block);
    }
    assert.ok(skeleton.includes('y ~ normal(mu, sigma);'), skeleton);
    assert.ok(skeleton.includes('array[N] real y_rep = normal_rng(rep_vector(mu, N), sigma);'), skeleton);
  });
});
