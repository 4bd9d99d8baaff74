// Scope assertions for the TextMate grammar, written from the Stan reference
// manual's lexical rules, plus a sweep over the shared Stan corpus.

import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { EXTENSION_ROOT, scopesOfToken, tokenize } from './grammarHarness';

/** Asserts that `text` (its n-th occurrence) carries `scope` as its innermost scope. */
async function expectScope(source: string, text: string, scope: string, occurrence = 1) {
  const scopes = await scopesOfToken(source, text, occurrence);
  assert.equal(
    scopes[scopes.length - 1],
    scope,
    `${JSON.stringify(text)} in ${JSON.stringify(source)} has scopes ${scopes.join(' ')}`,
  );
}

describe('program blocks', () => {
  const blocks = [
    'functions',
    'data',
    'transformed data',
    'parameters',
    'transformed parameters',
    'model',
    'generated quantities',
  ];
  for (const block of blocks) {
    test(`${block} header`, async () => {
      await expectScope(`${block} {\n}`, block, 'keyword.other.block.bat');
      await expectScope(`${block}\n{\n}`, block, 'keyword.other.block.bat');
    });
  }

  test('block words are not headers without a following brace', async () => {
    await expectScope('real model_fit = model + 1;', 'model', 'variable.other.bat');
    await expectScope('real f(data real x);', 'data', 'storage.modifier.data.bat');
  });

  test('several blocks on one line', async () => {
    const source = 'data { int N; } parameters { real mu; } model { mu ~ std_normal(); }';
    await expectScope(source, 'data', 'keyword.other.block.bat');
    await expectScope(source, 'parameters', 'keyword.other.block.bat');
    await expectScope(source, 'model', 'keyword.other.block.bat');
  });
});

describe('types', () => {
  const unconstrained = ['int', 'real', 'complex', 'vector', 'row_vector', 'matrix', 'complex_vector',
    'complex_row_vector', 'complex_matrix', 'array', 'tuple', 'void'];
  for (const type of unconstrained) {
    test(type, () => expectScope(`${type} x;`, type, 'storage.type.primitive.bat'));
  }
  const constrained = ['simplex', 'unit_vector', 'sum_to_zero_vector', 'sum_to_zero_matrix', 'ordered',
    'positive_ordered', 'cholesky_factor_corr', 'cholesky_factor_cov', 'corr_matrix', 'cov_matrix',
    'column_stochastic_matrix', 'row_stochastic_matrix'];
  for (const type of constrained) {
    test(type, () => expectScope(`${type}[K] x;`, type, 'storage.type.constrained.bat'));
  }

  test('type names inside identifiers are not types', async () => {
    await expectScope('int n = to_int(x);', 'to_int', 'entity.name.function.call.bat');
    await expectScope('real real_part = 1;', 'real_part', 'variable.other.bat');
  });

  for (const keyword of ['lower', 'upper', 'offset', 'multiplier']) {
    test(`${keyword} inside <...>`, async () => {
      const source = `vector<${keyword}=1>[N] x;`;
      await expectScope(source, keyword, 'keyword.other.constraint.bat');
      await expectScope(source, '<', 'punctuation.definition.constraint.begin.bat');
      await expectScope(source, '>', 'punctuation.definition.constraint.end.bat');
    });
    test(`${keyword} outside <...> is an identifier`, () =>
      expectScope(`real ${keyword} = 1;`, keyword, 'variable.other.bat'));
  }

  test('a parenthesised comparison does not close the constraint', async () => {
    const source = 'real<lower=0, upper=(K > 2 ? 1 : 2)> b;';
    await expectScope(source, '>', 'keyword.operator.comparison.bat', 1);
    await expectScope(source, '>', 'punctuation.definition.constraint.end.bat', 2);
    await expectScope(source, 'b', 'variable.other.bat');
  });

  test('a constraint may continue on the next line', async () => {
    const source = 'real<lower=0,\n     upper=1> p;';
    await expectScope(source, 'upper', 'keyword.other.constraint.bat');
    await expectScope(source, 'p', 'variable.other.bat');
  });
});

describe('statements', () => {
  test('control keywords', async () => {
    const source = 'for (i in 1:N) { while (c) { if (a) break; else continue; } } return x;';
    await expectScope(source, 'for', 'keyword.control.loop.bat');
    await expectScope(source, 'in', 'keyword.control.loop.bat');
    await expectScope(source, 'while', 'keyword.control.loop.bat');
    await expectScope(source, 'if', 'keyword.control.conditional.bat');
    await expectScope(source, 'else', 'keyword.control.conditional.bat');
    await expectScope(source, 'break', 'keyword.control.flow.bat');
    await expectScope(source, 'continue', 'keyword.control.flow.bat');
    await expectScope(source, 'return', 'keyword.control.flow.bat');
  });

  test('print, reject, fatal_error and profile', async () => {
    await expectScope('print("x = ", x);', 'print', 'keyword.other.print.bat');
    await expectScope('reject("bad");', 'reject', 'keyword.control.exception.bat');
    await expectScope('fatal_error("bad");', 'fatal_error', 'keyword.control.exception.bat');
    await expectScope('profile("lik") { }', 'profile', 'keyword.other.profile.bat');
  });

  test('target and jacobian accumulators', async () => {
    await expectScope('target += normal_lpdf(y | 0, 1);', 'target', 'variable.language.target.bat');
    await expectScope('target += normal_lpdf(y | 0, 1);', '+=', 'keyword.operator.assignment.compound.bat');
    await expectScope('real t = target();', 'target', 'variable.language.target.bat');
    await expectScope('jacobian += log(x);', 'jacobian', 'variable.language.jacobian.bat');
    await expectScope('real jacobian = 1;', 'jacobian', 'variable.other.bat');
  });

  test('sampling statement and truncation', async () => {
    const source = 'y ~ normal(mu, sigma) T[L, U];';
    await expectScope(source, '~', 'keyword.operator.sampling.bat');
    await expectScope(source, 'normal', 'entity.name.function.distribution.bat');
    await expectScope(source, 'T', 'keyword.other.truncation.bat');
    await expectScope('y ~ poisson(l)T[1, ];', 'T', 'keyword.other.truncation.bat');
    await expectScope('real T = 1; x = T[1];', 'T', 'variable.other.bat', 2);
  });
});

describe('function names', () => {
  const suffixes = ['_lpdf', '_lupdf', '_lpmf', '_lupmf', '_lcdf', '_lccdf', '_cdf', '_rng', '_lp', '_jacobian'];
  for (const suffix of suffixes) {
    test(`call with ${suffix}`, async () => {
      const source = `x = foo${suffix}(y);`;
      await expectScope(source, 'foo', 'entity.name.function.call.bat');
      await expectScope(source, suffix, 'keyword.other.suffix.bat');
    });
  }

  test('a suffix in the middle of a name is not a suffix', () =>
    expectScope('x = my_lp_helper(y);', 'my_lp_helper', 'entity.name.function.call.bat'));

  test('definitions', async () => {
    await expectScope('real zip_lpmf(int y, real t) {', 'zip', 'entity.name.function.definition.bat');
    await expectScope('real zip_lpmf(int y, real t) {', '_lpmf', 'keyword.other.suffix.bat');
    await expectScope('void check(real x);', 'check', 'entity.name.function.definition.bat');
    await expectScope('array[] real cumulative(array[] real xs) {', 'cumulative', 'entity.name.function.definition.bat');
  });
});

describe('literals, operators and comments', () => {
  const numbers: Array<[string, string]> = [
    ['42', 'constant.numeric.integer.bat'],
    ['3.14', 'constant.numeric.float.bat'],
    ['.5', 'constant.numeric.float.bat'],
    ['3.', 'constant.numeric.float.bat'],
    ['1e-8', 'constant.numeric.float.bat'],
    ['2.5E+10', 'constant.numeric.float.bat'],
    ['2i', 'constant.numeric.imaginary.bat'],
    ['1.5i', 'constant.numeric.imaginary.bat'],
    ['1e3i', 'constant.numeric.imaginary.bat'],
    ['2_147_483_647', 'constant.numeric.integer.bat'],
    ['1_000.000_1e1_0', 'constant.numeric.float.bat'],
    ['1_0i', 'constant.numeric.imaginary.bat'],
  ];
  for (const [literal, scope] of numbers) {
    test(`number ${literal}`, () => expectScope(`x = ${literal};`, literal, scope));
  }

  // stanc3's bad/numeric-literal cases: '_' only between digits.
  for (const bad of ['12_.345', '12._345', '12.3_e+10', '12_']) {
    test(`${bad} is not one number`, async () => {
      const [line] = await tokenize(`x = ${bad};`);
      const numbers = line.tokens.filter((token) => token.scopes.some((scope) => scope.startsWith('constant.numeric')));
      assert.ok(!numbers.some((token) => token.text === bad), numbers.map((token) => token.text).join(' '));
    });
  }

  test('tuple indexing is not a real literal', async () => {
    await expectScope('x = p.1 + q.2.1;', '1', 'constant.numeric.tuple-index.bat');
    await expectScope('x = p.1 + q.2.1;', '2', 'constant.numeric.tuple-index.bat');
  });

  const operators: Array<[string, string]> = [
    ['.*', 'keyword.operator.arithmetic.elementwise.bat'],
    ['./', 'keyword.operator.arithmetic.elementwise.bat'],
    ['.^', 'keyword.operator.arithmetic.elementwise.bat'],
    ['%/%', 'keyword.operator.arithmetic.bat'],
    ['\\', 'keyword.operator.arithmetic.bat'],
    ['&&', 'keyword.operator.logical.bat'],
    ['||', 'keyword.operator.logical.bat'],
    ['<=', 'keyword.operator.comparison.bat'],
    ['!=', 'keyword.operator.comparison.bat'],
  ];
  for (const [operator, scope] of operators) {
    test(`operator ${operator}`, () => expectScope(`x = a ${operator} b;`, operator, scope));
  }

  test('transpose and conditional bar', async () => {
    await expectScope("m = X' * X;", "'", 'keyword.operator.transpose.bat');
    await expectScope('t = normal_lpdf(y | mu, s);', '|', 'punctuation.separator.conditional.bat');
  });

  test('strings do not contain code or comments', async () => {
    const source = 'print("a // b /* c", x);';
    const lines = await tokenize(source);
    const stringText = lines[0].tokens
      .filter((token) => token.scopes.includes('string.quoted.double.bat'))
      .map((token) => token.text)
      .join('');
    assert.equal(stringText, '"a // b /* c"');
    await expectScope(source, 'x', 'variable.other.bat');
  });

  test('comments', async () => {
    await expectScope('x = 1; // note', ' note', 'comment.line.double-slash.bat');
    await expectScope('/* a\nmodel {\n*/ x', 'model {', 'comment.block.bat');
    await expectScope('/** @param y data */', '@param', 'keyword.other.documentation.tag.bat');
    await expectScope('/**/ x', 'x', 'variable.other.bat');
  });

  test('#include directives', async () => {
    await expectScope('#include "lib.stan"', '"lib.stan"', 'string.quoted.double.include.bat');
    await expectScope('#include <lib.stan>', '<lib.stan>', 'string.quoted.other.lt-gt.include.bat');
    await expectScope('#include lib.stan', 'lib.stan', 'string.unquoted.include.bat');
    await expectScope('#include lib.stan', 'include', 'keyword.control.directive.include.bat');
  });
});

describe('Markdown fenced code blocks', () => {
  const document = [
    '# A model',
    '',
    '```stan',
    'parameters { real<lower=0> sigma; }',
    '```',
    '',
    'real model = 1;',
    '',
    '~~~ bat {.numberLines}',
    'model { y ~ normal(0, 1); }',
    '~~~',
    '',
    '```python',
    'model = 1',
    '```',
  ].join('\n');

  test('```stan and ~~~ bat blocks are highlighted as bat, other text is not', async () => {
    const lines = await tokenize(document, 'text.html.markdown');
    const scopesOf = (lineIndex: number, text: string) => {
      const token = lines[lineIndex].tokens.find((candidate) => candidate.text === text);
      assert.ok(token, `${text} on line ${lineIndex + 1}`);
      return token.scopes;
    };
    assert.ok(scopesOf(3, 'parameters').includes('keyword.other.block.bat'));
    assert.ok(scopesOf(3, 'parameters').includes('meta.embedded.block.stan'));
    assert.ok(scopesOf(3, 'lower').includes('keyword.other.constraint.bat'));
    assert.ok(scopesOf(9, 'normal').includes('entity.name.function.distribution.bat'));
    assert.ok(scopesOf(2, 'stan').includes('fenced_code.block.language.markdown'));
    // Outside the fences nothing is bat code.
    for (const index of [0, 6, 13]) {
      for (const token of lines[index].tokens) {
        assert.ok(!token.scopes.some((scope) => scope.endsWith('.bat')), `line ${index + 1}: ${token.scopes}`);
      }
    }
  });
});

// The shared corpus (stanc3's accepted test models and the posteriordb models)
// lives beside the repository; CI provides it as ../shared.
const CORPUS = process.env.BAT_CORPUS ?? path.resolve(EXTENSION_ROOT, '..', '..', '..', 'shared', 'corpus');

function stanFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) return stanFiles(full);
    return entry.name.endsWith('.stan') ? [full] : [];
  });
}

describe('corpus sweep', () => {
  test('every token of every accepted model is scoped and every construct closes', async () => {
    assert.ok(existsSync(CORPUS), `test corpus missing at ${CORPUS}: clone the repository beside shared/`);
    const all = [
      ...stanFiles(path.join(CORPUS, 'stanc3', 'good')),
      ...stanFiles(path.join(CORPUS, 'posteriordb-models')),
    ].sort();
    // function-signatures/ is 15 MB of generated calls of every builtin; every
    // 20th file covers its shapes while keeping the test a few seconds long.
    const signatures = all.filter((file) => file.includes(`${path.sep}function-signatures${path.sep}`));
    const files = [
      ...all.filter((file) => !signatures.includes(file)),
      ...signatures.filter((_, index) => index % 20 === 0),
    ];
    assert.ok(files.length > 100, `expected the corpus to hold > 100 models, found ${files.length}`);
    const problems: string[] = [];
    for (const file of files) {
      const lines = await tokenize(readFileSync(file, 'utf8'));
      lines.forEach((line, index) => {
        const where = `${path.relative(CORPUS, file)}:${index + 1}`;
        for (const token of line.tokens) {
          if (token.text.trim() !== '' && token.scopes.length === 1) {
            problems.push(`${where}: unscoped ${JSON.stringify(token.text)}`);
          }
        }
        const last = line.tokens[line.tokens.length - 1];
        const inBlockComment = last?.scopes.some((scope) => scope.startsWith('comment.block')) ?? false;
        if (line.depthAfter !== 1 && !inBlockComment) {
          problems.push(`${where}: construct left open (${last?.scopes.join(' ')})`);
        }
      });
      if (lines[lines.length - 1].depthAfter !== 1) {
        problems.push(`${path.relative(CORPUS, file)}: open at end of file`);
      }
    }
    assert.deepEqual(problems.slice(0, 20), []);
  });
});
