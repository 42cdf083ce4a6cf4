// The frames to and from xce-spawn (spawn-protocol.ts): events decoded from a stream cut anywhere,
// and everything xce-spawn never writes refused with the byte where it is.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeSignal, encodeSpawn, type SpawnEvent, SpawnEventDecoder, SpawnProtocolError } from './spawn-protocol.js';

/** One event frame: type, id, body. */
function frame(type: number, id: number, body: number[] = [], length?: number): Buffer {
  const b = Buffer.alloc(9 + body.length);
  b.writeUInt32LE(length ?? 5 + body.length, 0);
  b.writeUInt8(type, 4);
  b.writeUInt32LE(id, 5);
  Buffer.from(body).copy(b, 9);
  return b;
}

const i32 = (...v: number[]): number[] => {
  const b = Buffer.alloc(4 * v.length);
  v.forEach((x, i) => b.writeInt32LE(x, 4 * i));
  return [...b];
};

const STREAM = Buffer.concat([
  frame(1, 1, i32(4242)),
  frame(2, 2, i32(2)),
  frame(3, 3),
  frame(4, 4, [2]),
  frame(5, 1, i32(0, 0)),
  frame(5, 5, i32(-1, 15)),
]);
const EVENTS: SpawnEvent[] = [
  { t: 'spawned', id: 1, pid: 4242 },
  { t: 'failed', id: 2, errno: 2 },
  { t: 'fallback', id: 3 },
  { t: 'unwritable', id: 4, which: 'stderr' },
  { t: 'ended', id: 1, exitCode: 0, signal: null },
  { t: 'ended', id: 5, exitCode: null, signal: 15 },
];

test('events are decoded the same whatever the pieces the pipe gives them in', () => {
  assert.deepEqual(new SpawnEventDecoder().push(STREAM), EVENTS);
  for (let cut = 0; cut <= STREAM.length; cut++) {
    const d = new SpawnEventDecoder();
    const got = [...d.push(STREAM.subarray(0, cut)), ...d.push(STREAM.subarray(cut))];
    assert.deepEqual(got, EVENTS, `cut at byte ${cut}`);
    assert.equal(d.partial, false);
  }
  const bytewise = new SpawnEventDecoder();
  const got = [...STREAM].flatMap((b) => bytewise.push(Buffer.from([b])));
  assert.deepEqual(got, EVENTS);
  const d = new SpawnEventDecoder();
  d.push(STREAM.subarray(0, 7));
  assert.equal(d.partial, true, 'a frame cut short is seen');
});

test('anything xce-spawn never writes is refused, naming it and its byte in the stream', () => {
  const bad: Array<[Buffer, RegExp]> = [
    [frame(9, 1), /unknown event type 9 at byte 9/],
    [frame(0, 1), /unknown event type 0 at byte 9/],
    [frame(1, 1, i32(1), 3), /a frame of 3 bytes \(at least 5\) at byte 9/],
    [frame(1, 1, i32(1, 2)), /a spawned event of 13 bytes \(it has 9\) at byte 9/],
    [frame(3, 1, [], 1 << 30), /a fallback event of 1073741824 bytes \(it has 5\)/],
    [frame(1, 1, i32(0)), /spawned with pid 0 at byte 9/],
    [frame(4, 1, [3]), /unwritable output 3 \(1: stdout, 2: stderr\)/],
    [frame(5, 1, i32(-1, 0)), /ended with exit code -1 and signal 0 \(exactly one of them\)/],
    [frame(5, 1, i32(1, 9)), /ended with exit code 1 and signal 9/],
    [frame(5, 1, i32(256, 0)), /ended with exit code 256/],
  ];
  for (const [f, want] of bad) {
    const d = new SpawnEventDecoder();
    // A good frame first: the byte named is counted across pushes.
    d.push(frame(3, 7));
    assert.throws(
      () => d.push(f),
      (e: Error) => e instanceof SpawnProtocolError && want.test(e.message) && e.message.startsWith('xce-spawn wrote '),
      String(want),
    );
  }
});

test('a request with a NUL in a string or a bad limit is refused before anything is sent', () => {
  const req = {
    file: '/bin/true',
    argv0: 'true',
    args: [],
    cwd: '/',
    env: { A: 'b' },
    out: '/o',
    err: '/e',
    limits: {},
  };
  assert.throws(() => encodeSpawn(1, { ...req, args: ['a\0b'] }), /the argv\[1\] of the job contains a NUL byte/);
  assert.throws(
    () => encodeSpawn(1, { ...req, env: { A: 'x\0' } }),
    /the environment variable A of the job contains a NUL/,
  );
  assert.throws(() => encodeSpawn(1, { ...req, limits: { cpu_s: 1.5 } }), /the cpu limit 1.5 is not a whole number/);
  const f = encodeSpawn(9, { ...req, limits: { memory_bytes: 1025 } });
  assert.equal(f.readUInt32LE(0), f.length - 4);
  assert.deepEqual([f.readUInt8(4), f.readUInt32LE(5)], [1, 9]);
  assert.deepEqual([f.readBigInt64LE(9), f.readBigInt64LE(17)], [-1n, 2n], 'no cpu limit; memory in KiB, rounded up');
  assert.deepEqual([f.readUInt32LE(25), f.readUInt32LE(29)], [1, 1]);
  assert.equal(f.subarray(33).toString(), '/bin/true\0/\0/o\0/e\0true\0A=b\0');
  assert.deepEqual([...encodeSignal(3, 15)], [9, 0, 0, 0, 2, 3, 0, 0, 0, 15, 0, 0, 0]);
});
