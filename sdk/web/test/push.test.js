// push.js against a fake browser and a fake Push Service (node --test sdk/web/test/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeBrowser, FakeService } from './fakes.js';

async function subscribed(options) {
  const service = new FakeService();
  const browser = new FakeBrowser(service, options);
  const sdk = await browser.page();
  await sdk.init({ baseUrl: service.base + '/', publicKey: service.publicKey, serviceWorker: '/push-sw.js', scope: '/' });
  return { service, browser, sdk };
}

test('init refuses a server key and a missing base URL', async () => {
  const service = new FakeService();
  const sdk = await new FakeBrowser(service).page();
  assert.throws(() => sdk.init({ baseUrl: service.base, publicKey: 'ps_live_' + 'x'.repeat(43) }), /public client key/);
  assert.throws(() => sdk.init({ publicKey: service.publicKey }), /baseUrl/);
});

test('init without permission registers the worker and asks nothing', async () => {
  const { service, browser, sdk } = await subscribed();
  assert.equal(browser.prompts, 0);
  assert.equal(sdk.default.permission, 'default');
  assert.deepEqual(navigator.serviceWorker.registered, [{ url: '/push-sw.js', options: { scope: '/' } }]);
  assert.equal(service.requests.length, 0, 'no request before the visitor subscribes');
  assert.equal(sdk.default.deviceId, null);
});

test('subscribe asks permission, subscribes with the app key and registers a web device', async () => {
  const { service, browser, sdk } = await subscribed();
  const changes = [];
  sdk.default.addEventListener('subscriptionchange', (e) => changes.push(e.detail));

  const id = await sdk.subscribe();

  assert.equal(browser.prompts, 1);
  assert.equal(sdk.default.permission, 'granted');
  const sub = browser.pushManager.current;
  assert.equal(Buffer.from(sub.options.applicationServerKey).toString('base64url'), service.vapidKey);
  const register = service.requests.find((r) => r.path === '/v1/devices/register');
  assert.equal(register.body.platform, 'web');
  assert.deepEqual(JSON.parse(register.body.push_token), { endpoint: sub.endpoint, keys: { p256dh: sub.p256dh, auth: sub.auth } });
  assert.equal(register.body.locale, 'fr-CA');
  assert.ok(register.body.timezone);
  assert.equal(service.enabledDevices().length, 1);
  assert.equal(id, [...service.devices.keys()][0]);
  assert.equal(sdk.default.deviceId, id);
  assert.equal(browser.indexedDB.value('device').deviceId, id, 'the worker reads it from IndexedDB');
  assert.deepEqual(browser.indexedDB.value('config'), { baseUrl: service.base, publicKey: service.publicKey });
  assert.deepEqual(changes, [{ subscribed: true, deviceId: id, reason: 'subscribed' }]);
});

test('subscribe resolves to null when the visitor refuses, and registers nothing', async () => {
  const { service, sdk } = await subscribed({ grant: 'denied' });
  assert.equal(await sdk.subscribe(), null);
  assert.equal(service.devices.size, 0);
});

test('reloads keep one device and do not register again within a day', async () => {
  const { service, browser, sdk } = await subscribed();
  const id = await sdk.subscribe();
  const registrations = () => service.requests.filter((r) => r.path === '/v1/devices/register').length;
  for (let i = 0; i < 3; i++) {
    const page = await browser.page();
    assert.equal(await page.init({ baseUrl: service.base, publicKey: service.publicKey }), id);
    assert.equal(page.default.deviceId, id);
  }
  assert.equal(registrations(), 1);
  assert.equal(service.devices.size, 1);
  assert.equal(browser.prompts, 1);
  assert.equal(browser.pushManager.subscribes, 1);
});

test('a reload after a day refreshes the same device', async () => {
  const { service, browser, sdk } = await subscribed();
  const id = await sdk.subscribe();
  const stored = browser.indexedDB.dbs.get('push-service').get('state');
  stored.set('device', { ...stored.get('device'), registeredAt: Date.now() - 2 * 86400000 });
  const page = await browser.page();
  assert.equal(await page.init({ baseUrl: service.base, publicKey: service.publicKey }), id);
  assert.equal(service.requests.filter((r) => r.path === '/v1/devices/register').length, 2);
  assert.equal(service.devices.size, 1);
});

test('login and logout leave exactly one enabled device', async () => {
  const { service, browser, sdk } = await subscribed();
  const anonymous = await sdk.subscribe();
  await sdk.login('ada', 'jwt-for-ada');
  const login = service.requests.filter((r) => r.path === '/v1/devices/register').at(-1);
  assert.equal(login.body.external_user_id, 'ada');
  assert.equal(login.body.identity_token, 'jwt-for-ada');
  assert.equal(sdk.default.deviceId, anonymous, 'a known endpoint is the same device');
  assert.equal(service.devices.get(anonymous).user, 'ada');
  await sdk.login('ada');
  assert.equal(service.enabledDevices().length, 1);

  // a reload: the stored user is kept, and the re-sync does not re-send it
  const page = await browser.page();
  await page.init({ baseUrl: service.base, publicKey: service.publicKey });
  assert.equal(service.enabledDevices().length, 1);

  await page.logout();
  const enabled = service.enabledDevices();
  assert.equal(enabled.length, 1, 'the user\'s device is deleted, the browser has one anonymous device');
  assert.equal(enabled[0].user, null);
  assert.notEqual(page.default.deviceId, anonymous);
  assert.equal(service.devices.get(anonymous).enabled, false);
  assert.equal(browser.prompts, 1, 'logout never prompts');
});

test('login before subscribing is applied by the first registration', async () => {
  const { service, sdk } = await subscribed();
  await sdk.login('bo');
  await sdk.setTags({ plan: 'pro' });
  assert.equal(service.devices.size, 0);
  await sdk.subscribe();
  const [device] = service.enabledDevices();
  assert.equal(device.user, 'bo');
  assert.deepEqual(device.tags, { plan: 'pro' });
});

test('setTags registers the same device with the tags', async () => {
  const { service, sdk } = await subscribed();
  const id = await sdk.subscribe();
  await sdk.setTags({ plan: 'pro', visits: 3 });
  await sdk.setTags({ color: 'red' });
  const last = service.requests.filter((r) => r.path === '/v1/devices/register').at(-1);
  assert.deepEqual(last.body.tags, { color: 'red' }, 'only what changed: tags merge on the service');
  assert.deepEqual(service.devices.get(id).tags, { plan: 'pro', visits: 3, color: 'red' });
  assert.equal(service.devices.size, 1);
  assert.throws(() => sdk.setTags([1]), /object/);
});

test('a subscription the browser replaced is registered again on load, the old device deleted', async () => {
  const { service, browser, sdk } = await subscribed();
  await sdk.login('cy');
  await sdk.setTags({ plan: 'team' });
  const old = await sdk.subscribe();
  // Chromium replaces subscriptions without pushsubscriptionchange: a new endpoint behind the page's back
  await browser.pushManager.current.unsubscribe();
  await browser.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: service.vapidKey });

  const page = await browser.page();
  const changes = [];
  page.default.addEventListener('subscriptionchange', (e) => changes.push(e.detail.reason));
  const id = await page.init({ baseUrl: service.base, publicKey: service.publicKey });

  assert.notEqual(id, old);
  const enabled = service.enabledDevices();
  assert.equal(enabled.length, 1);
  assert.equal(enabled[0].endpoint, browser.pushManager.current.endpoint);
  assert.equal(enabled[0].user, 'cy', 'the new device keeps the browser\'s user');
  assert.deepEqual(enabled[0].tags, { plan: 'team' }, 'and its tags');
  assert.equal(service.devices.get(old).enabled, false);
  assert.deepEqual(changes, ['subscribed']);
});

test('changed keys on the same endpoint refresh the same device', async () => {
  const { service, browser, sdk } = await subscribed();
  const id = await sdk.subscribe();
  browser.pushManager.current.auth = Buffer.alloc(16, 7).toString('base64url');
  const page = await browser.page();
  assert.equal(await page.init({ baseUrl: service.base, publicKey: service.publicKey }), id);
  assert.equal(service.devices.get(id).token.keys.auth, Buffer.alloc(16, 7).toString('base64url'));
  assert.equal(service.devices.size, 1);
});

test('a VAPID key change: unsubscribe, subscribe with the new key, one device', async () => {
  const { service, browser, sdk } = await subscribed();
  const old = await sdk.subscribe();
  service.rotateVapidKey();

  const page = await browser.page();
  const id = await page.init({ baseUrl: service.base, publicKey: service.publicKey });

  assert.notEqual(id, old);
  const sub = browser.pushManager.current;
  assert.equal(Buffer.from(sub.options.applicationServerKey).toString('base64url'), service.vapidKey);
  assert.equal(service.enabledDevices().length, 1);
  assert.equal(service.enabledDevices()[0].endpoint, sub.endpoint);
  assert.equal(browser.indexedDB.value('device').vapidKey, service.vapidKey);
  assert.equal(browser.prompts, 1);
});

test('a lost subscription with permission still granted is made again on load', async () => {
  const { service, browser, sdk } = await subscribed();
  const old = await sdk.subscribe();
  await browser.pushManager.current.unsubscribe(); // e.g. site data partly cleared
  const page = await browser.page();
  const id = await page.init({ baseUrl: service.base, publicKey: service.publicKey });
  assert.ok(browser.pushManager.current);
  assert.notEqual(id, old);
  assert.equal(service.enabledDevices().length, 1);
});

test('permission revoked: the device is deleted on the next load', async () => {
  const { service, browser, sdk } = await subscribed();
  const old = await sdk.subscribe();
  browser.permission = 'denied';
  browser.pushManager.current = null;
  const page = await browser.page();
  const changes = [];
  page.default.addEventListener('subscriptionchange', (e) => changes.push(e.detail));
  assert.equal(await page.init({ baseUrl: service.base, publicKey: service.publicKey }), null);
  assert.equal(service.devices.get(old).enabled, false);
  assert.deepEqual(changes, [{ subscribed: false, deviceId: null, reason: 'permission_denied' }]);
});

test('unsubscribe unsubscribes the browser and deletes the device', async () => {
  const { service, browser, sdk } = await subscribed();
  const id = await sdk.subscribe();
  await sdk.unsubscribe();
  assert.equal(browser.pushManager.current, null);
  assert.equal(service.devices.get(id).enabled, false);
  assert.equal(sdk.default.deviceId, null);
  assert.equal(browser.indexedDB.value('device'), undefined);
  // a reload does not bring it back
  const page = await browser.page();
  assert.equal(await page.init({ baseUrl: service.base, publicKey: service.publicKey }), null);
  assert.equal(service.enabledDevices().length, 0);
});

test('concurrent calls are serialized: one device', async () => {
  const { service, sdk } = await subscribed();
  await Promise.all([sdk.subscribe(), sdk.subscribe(), sdk.login('di'), sdk.setTags({ a: 1 })]);
  assert.equal(service.devices.size, 1);
  assert.equal(service.enabledDevices()[0].user, 'di');
});

test('a user carried to a new device without an identity token falls back to anonymous', async () => {
  const { service, browser, sdk } = await subscribed();
  await sdk.subscribe();
  await sdk.login('eve', 'token');
  service.identityRequired = true;
  service.rotateVapidKey();
  const page = await browser.page();
  await page.init({ baseUrl: service.base, publicKey: service.publicKey });
  const enabled = service.enabledDevices();
  assert.equal(enabled.length, 1);
  assert.equal(enabled[0].user, null);
});

test('errors of the service reach the caller with status and code', async () => {
  const { service, sdk } = await subscribed();
  service.publicKey = 'ps_public_' + 'z'.repeat(43); // the page's key no longer works
  await assert.rejects(sdk.subscribe(), (e) => e.name === 'PushServiceError' && e.status === 401 && e.code === 'unauthorized');
});

test('push.js stays under 10 kB gzipped', async () => {
  const { readFileSync } = await import('node:fs');
  const { gzipSync } = await import('node:zlib');
  const { fileURLToPath } = await import('node:url');
  for (const file of ['push.js', 'push-sw.js']) {
    const source = readFileSync(fileURLToPath(new URL('../' + file, import.meta.url)));
    const gzipped = gzipSync(source, { level: 9 }).length;
    console.log(`${file}: ${source.length} bytes, ${gzipped} bytes gzipped`);
    assert.ok(gzipped < 10240, `${file} is ${gzipped} bytes gzipped`);
  }
});
