// The leader's worker endpoint against scripted workers (issue 21): only a host of the replicated
// hosts.yaml may register, and a status or ack is taken only from the head host of the job's
// current run. The node's Raft is a stand-in (propose = apply at the next index, then the hub hears
// of it), so a proposal is applied by the time `propose` returns.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hostNotConfiguredReason } from './worker-hub.js';
import { joined, statusFrame, waitFor, withSetup, worker } from '../testing/worker-hub-harness.js';

test('a worker for a host hosts.yaml does not list is refused at registration, with the reason, and logged', () =>
  withSetup(async (s) => {
    const w = worker(s, 'node99');
    await w.open;
    w.register('node99');
    await waitFor('the connection to close', () => w.closed !== null);
    const reason = 'host node99 is not in hosts.yaml: add it there (xceadmin config upgrade) before starting its xcecd';
    assert.equal(hostNotConfiguredReason('node99'), reason);
    assert.deepEqual(w.got, [{ type: 'refused', reason }]);
    assert.equal(w.closed!.code, 1008);
    assert.equal(w.closed!.reason, reason);
    assert.equal(s.hub.refusedRegistrations, 1);
    assert.equal(s.hub.availableHosts().has('node99'), false);
    const line = s.logs.find((l) => l['msg'] === 'refused a worker registration');
    assert.ok(line !== undefined, JSON.stringify(s.logs));
    assert.equal(line['host'], 'node99');
    assert.equal(line['reason'], reason);
    // A host that hosts.yaml lists registers as before.
    await joined(s, 'n2');
    assert.equal(s.hub.availableHosts().has('n2'), true);
  }));

test('a status from a host the job does not run on is dropped, logged once with both hosts, counted, never proposed', () =>
  withSetup(async (s) => {
    const rogue = await joined(s, 'n2');
    const finished = statusFrame('n2', 1, 1, { kind: 'finished', exitCode: 0, signal: null });
    rogue.send(finished);
    rogue.send(finished);
    await waitFor('both statuses to be dropped', () => s.hub.foreignStatuses === 2);
    assert.equal(s.job.state, 'RUN');
    assert.equal(s.job.started, false);
    assert.equal(s.node.proposals, 0, 'nothing proposed');
    assert.equal(rogue.got.filter((f) => f.type === 'status-ack').length, 0, 'never acked');
    const lines = s.logs.filter((l) => l['msg'] === 'dropped a status from a host that does not run the job');
    assert.equal(lines.length, 1, 'logged once');
    assert.equal(lines[0]!['host'], 'n2');
    assert.equal(lines[0]!['headHost'], 'n1');
    assert.match(String(lines[0]!['reason']), /job 1 run 1 is dispatched to host n1, not to host n2/);

    // The head host's own status goes through as before.
    const head = await joined(s, 'n1', 'start');
    head.send(statusFrame('n1', 1, 1, { kind: 'started', pid: 4242 }));
    await waitFor('the status-ack on n1', () => head.got.some((f) => f.type === 'status-ack'));
    assert.equal(s.job.state, 'RUN');
    assert.equal(s.job.started, true);
    assert.equal(s.job.pid, 4242);
  }));

test('a start refusal from a host the job does not run on is dropped: a kill does not end the job as refused', () =>
  withSetup(async (s) => {
    // n1 takes the start and says nothing yet; n2 claims to have refused it.
    const head = await joined(s, 'n1', 'start');
    const rogue = await joined(s, 'n2');
    rogue.send({ type: 'ack', ref: 'start', jobId: 1, run: 1, outcome: 'refused', reason: 'made up by n2' });
    rogue.send({ type: 'ack', ref: 'kill', jobId: 1, run: 1, outcome: 'unknown' });
    await waitFor('both acks to be dropped', () => s.hub.foreignAcks === 2);
    const lines = s.logs.filter((l) => l['msg'] === 'dropped an ack from a host that does not run the job');
    assert.deepEqual(
      lines.map((l) => [l['host'], l['headHost'], l['kind']]),
      [
        ['n2', 'n1', 'start refused'],
        ['n2', 'n1', 'kill unknown'],
      ],
    );
    // The kill goes to n1, which runs the job; nothing ends it before n1 reports.
    await s.node.fact({ kind: 'control', jobId: 1, action: 'kill', user: 'alice' });
    assert.equal(s.job.state, 'RUN');
    await waitFor('the kill on n1', () => head.got.some((f) => f.type === 'kill'));
    assert.equal(rogue.got.filter((f) => f.type === 'kill').length, 0);
    assert.equal(s.node.proposals, 0, 'nothing proposed by the hub');
  }));

test('a status on a run that is over is acked without a proposal; one on a run not applied yet is neither', () =>
  withSetup(async (s) => {
    const head = await joined(s, 'n1', 'start');
    await s.node.fact({ kind: 'control', jobId: 1, action: 'requeue', user: 'alice' });
    assert.equal(s.job.state, 'PEND');
    // Run 1 was requeued: its finished status changes nothing, and the worker must stop re-sending it.
    head.send(statusFrame('n1', 1, 1, { kind: 'finished', exitCode: 143, signal: 'SIGTERM' }));
    await waitFor('the status-ack', () =>
      head.got.some((f) => f.type === 'status-ack' && f.statusId === 'n1/1.1/finished'),
    );
    // Run 2 is not dispatched (in this state): not proposed, not acked (the worker would re-send it).
    head.send(statusFrame('n1', 1, 2, { kind: 'started', pid: 7 }));
    head.send({ type: 'heartbeat', host: 'n1', seq: 0 });
    head.send(statusFrame('n1', 1, 1, { kind: 'finished', exitCode: 143, signal: 'SIGTERM' }));
    await waitFor('the second status-ack', () => head.got.filter((f) => f.type === 'status-ack').length === 2);
    assert.equal(head.got.filter((f) => f.type === 'status-ack' && f.statusId === 'n1/1.2/started').length, 0);
    assert.equal(s.node.proposals, 0);
    assert.equal(s.job.state, 'PEND');
    assert.equal(s.hub.foreignStatuses, 0);
  }));
