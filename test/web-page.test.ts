// The web status page in a real browser: Debian's headless Chromium driven by playwright-core
// against three real controllers and a worker. The page refuses to show anything without a token,
// logs in, shows the leader, and follows a job submitted through the REST API to DONE, with no
// JavaScript error. A screenshot of the page at a laptop's size is saved under the system's temp
// folder (the test prints its path). Skipped, saying why, where /usr/bin/chromium is absent
// (`apt-get install chromium`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { TestCluster } from '../harness/cluster.js';

const CHROMIUM = '/usr/bin/chromium';
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
/** Where the screenshot goes: outside the tree, kept after the test for a person to look at. */
export const SCREENSHOT_DIR = join(tmpdir(), 'xce-web-page');
const WAIT_MS = 30_000;

const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is absent: install Debian's chromium package to run this test`;

test(
  'the status page logs in, shows the leader and a job reaching DONE, without JavaScript errors',
  { skip },
  async (t) => {
    const work = mkdtempSync(join(tmpdir(), 'xce-web-'));
    const profileDir = mkdtempSync(join(tmpdir(), 'xce-chromium-'));
    const cluster = await TestCluster.start({
      controllers: 3,
      schedulerGrace_ms: 200,
      workers: [
        { host: 'node01', slots: 8, bools: ['ib', 'x86_64'], nums: { mem: 262144 }, extraArgs: ['--run-as-self'] },
      ],
    });
    const context = await chromium.launchPersistentContext(profileDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: FLAGS,
      viewport: { width: 1366, height: 860 },
    });
    try {
      const page = context.pages()[0] ?? (await context.newPage());
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
      page.on('console', (m) => {
        // A refused request (401 before login) is logged by the browser itself; anything else is ours.
        if (m.type() === 'error' && !/status of 40[13]/.test(m.text())) errors.push(`console: ${m.text()}`);
      });
      const leader = await cluster.waitForLeader();
      const follower = [1, 2, 3].find((id) => id !== leader)!;
      // Served by a follower: the page works from any controller.
      const base = `http://${cluster.address(follower)}`;
      await page.goto(`${base}/`);

      // Without a token, nothing but the login form.
      assert.equal(await page.isVisible('#login'), true);
      assert.equal(await page.isVisible('#main'), false);
      const noToken = await page.evaluate(async () => (await fetch('/v1/jobs')).status);
      assert.equal(noToken, 401);

      await page.fill('#user', 'admin');
      await page.fill('#password', 'wrong');
      await page.click('#login button[type=submit]');
      await page.waitForSelector('#error:not([hidden])', { timeout: WAIT_MS });
      assert.match((await page.textContent('#error')) ?? '', /Login failed/);

      await page.fill('#password', 'admin-dev');
      await page.click('#login button[type=submit]');
      await page.waitForSelector('#main:not([hidden])', { timeout: WAIT_MS });
      await page.locator('#cluster-summary', { hasText: `Leader node ${leader}` }).waitFor({ timeout: WAIT_MS });

      // A job submitted through the REST API with the page's own token, followed to DONE on the page.
      const token = (await page.evaluate('sessionStorage.getItem("xce-token")')) as string;
      const r = await fetch(`${base}/v1/jobs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ command: ['true'], name: 'from-the-page-test', cwd: work }),
      });
      assert.equal(r.status, 201);
      const { jobId } = (await r.json()) as { jobId: number };
      await page
        .locator('#finished tr', { hasText: `#${jobId}` })
        .filter({ hasText: 'DONE' })
        .waitFor({ timeout: WAIT_MS });
      await page.click(`#finished a[data-job="${jobId}"]`);
      await page.locator('#detail', { hasText: 'Frozen dispatch record' }).waitFor({ timeout: WAIT_MS });
      assert.match((await page.textContent('#detail')) ?? '', /python@[0-9a-f]+/);
      assert.match((await page.textContent('#hosts-table')) ?? '', /node01/);
      assert.match((await page.textContent('#apps')) ?? '', /python@[0-9a-f]+/);

      mkdirSync(SCREENSHOT_DIR, { recursive: true });
      const shot = join(SCREENSHOT_DIR, 'status-page.png');
      await page.screenshot({ path: shot, fullPage: true });
      t.diagnostic(`screenshot: ${shot}`);
      assert.deepEqual(errors, []);

      await page.click('#logout');
      assert.equal(await page.isVisible('#login'), true);
    } finally {
      await context.close();
      await cluster.stop();
      rmSync(profileDir, { recursive: true, force: true });
      rmSync(work, { recursive: true, force: true });
    }
  },
);
