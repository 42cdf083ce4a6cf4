import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bsubRunLimit, DirectiveError, directiveWords, parseDirectives, withCommandLine } from './job-script.js';
import { interpreterOf, scriptCommand } from '../daemon/worker/job-script.js';

const LSF = `#!/bin/bash
# an LSF job
#BSUB -J cfd
#BSUB -n 4 -q normal
#BSUB -R "select[ib] span[ptile=2]"
#BSUB -o out.%J -e err.%J
#BSUB -W 1:30
#BSUB -app python -cwd /tmp
echo hello
#BSUB -q ignored-after-the-first-command
`;

test('the common #BSUB options of an LSF script become submit options', () => {
  const d = parseDirectives(LSF, 'job.sh');
  assert.deepEqual(d.flags, {
    name: 'cfd',
    tasks: '4',
    queue: 'normal',
    resreq: 'select[ib] span[ptile=2]',
    output: 'out.%J',
    error: 'err.%J',
    limit: ['runtime=90m'],
    app: 'python',
    cwd: '/tmp',
  });
  assert.equal(d.lines.length, 6);
  assert.equal(d.lines[0], 'job.sh:3: #BSUB -J cfd');
});

test('#XCE lines take the options of the command line, long and short, with = or a separate value', () => {
  const d = parseDirectives(
    '#!/bin/sh\n#XCE --app=openfoam -n 64\n#XCE -R "select[mem>64000]" -e A=1 -e B="two words"\n#XCE -l runtime=1h --output out.%J\ntrue\n',
    's.sh',
  );
  assert.deepEqual(d.flags, {
    app: 'openfoam',
    tasks: '64',
    resreq: 'select[mem>64000]',
    env: ['A=1', 'B=two words'],
    limit: ['runtime=1h'],
    output: 'out.%J',
  });
});

test('an unknown #XCE option is refused, naming it and its line', () => {
  assert.throws(
    () => parseDirectives('#!/bin/sh\n\n#XCE -n 2\n#XCE --frobnicate 3\necho\n', 'job.sh'),
    (e: unknown) => e instanceof DirectiveError && /^job\.sh:4: #XCE --frobnicate: unknown option/.test(e.message),
  );
});

test('an unsupported #BSUB option is named as not supported, with what to use instead', () => {
  assert.throws(
    () => parseDirectives('#BSUB -M 4000\n', 'lsf.sh'),
    /lsf\.sh:1: #BSUB -M is not supported by xcecli \(use #XCE -l memory=SIZE \(e\.g\. 4G\)\); remove the option$/,
  );
  assert.throws(() => parseDirectives('#BSUB -Z 1\n', 'lsf.sh'), /lsf\.sh:1: #BSUB -Z: unknown option/);
});

test('a directive without its value, given twice, or with an open quote is refused with its line', () => {
  assert.throws(() => parseDirectives('#XCE -n\n', 'a'), /a:1: #XCE -n needs a value$/);
  assert.throws(() => parseDirectives('#XCE -n 2\n#BSUB -n 3\n', 'a'), /a:2: #BSUB -n is given again \(first at a:1\)/);
  assert.throws(() => parseDirectives('#XCE -R "select[ib]\n', 'a'), /a:1: unterminated double quote$/);
  assert.throws(() => parseDirectives('#XCE 4\n', 'a'), /a:1: #XCE 4: expected an option, not a value/);
});

test('#BSUB -W is [hours:]minutes', () => {
  assert.equal(bsubRunLimit('90', 'x'), '90m');
  assert.equal(bsubRunLimit('2:05', 'x'), '125m');
  assert.throws(() => bsubRunLimit('1h', 'x:2'), /x:2: #BSUB -W 1h: expected \[hours:\]minutes/);
  assert.throws(() => bsubRunLimit('0', 'x:2'), /larger than zero/);
});

test('directive words split like a shell: quotes, escapes, a trailing comment', () => {
  assert.deepEqual(directiveWords(` -R 'a b' -J x\\ y "q\\"t" # note`, 'w'), ['-R', 'a b', '-J', 'x y', 'q"t']);
});

test('the command line wins over directives: each option as a whole, -e and -l per name', () => {
  const merged = withCommandLine(
    { tasks: '4', queue: 'normal', env: ['A=1', 'B=2'], limit: ['runtime=90m'], preset: ['p'] },
    { tasks: '8', env: ['B=3'] },
  );
  assert.deepEqual(merged, { tasks: '8', queue: 'normal', env: ['A=1', 'B=3'], limit: ['runtime=90m'], preset: ['p'] });
});

test('a script runs by its interpreter line (program and one argument), else /bin/sh', () => {
  assert.deepEqual(interpreterOf('#!/bin/bash\necho'), ['/bin/bash']);
  assert.deepEqual(interpreterOf('#!/usr/bin/env python3 -u\nprint(1)'), ['/usr/bin/env', 'python3 -u']);
  assert.deepEqual(interpreterOf('#! /bin/bash -l \r\n'), ['/bin/bash', '-l']);
  assert.deepEqual(interpreterOf('echo hi\n'), ['/bin/sh']);
  assert.deepEqual(interpreterOf('#!\n'), ['/bin/sh']);
  assert.deepEqual(scriptCommand('#!/bin/bash\n', '/tmp/f', ['job.sh', 'a', 'b']), ['/bin/bash', '/tmp/f', 'a', 'b']);
});
