// push-sw.js in a vm context with a fake self.registration, clients, fetch and IndexedDB.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { FakeBrowser, FakeService, worker, pushData } from './fakes.js';

const plain = (v) => JSON.parse(JSON.stringify(v)); // objects made in the worker's context

/** A browser whose page subscribed (config and device in IndexedDB), and its worker. */
async function setUp(options) {
  const service = new FakeService();
  const browser = new FakeBrowser(service);
  const sdk = await browser.page();
  await sdk.init({ baseUrl: service.base, publicKey: service.publicKey });
  const deviceId = await sdk.subscribe();
  service.requests.length = 0;
  return { service, browser, deviceId, sw: worker(browser, options), sdk };
}

const NOTIFICATION = '0b8f5c3e-6f0e-4a59-9a57-3c1f1e0f6a11';

/**
 * What the service sends: payload-v1.json, whose keys WebPushProviderTests checks against a real
 * push of the service (WebPushPayload, format v1).
 */
const FIXTURE = JSON.parse(readFileSync(new URL('./payload-v1.json', import.meta.url), 'utf8'));

function payload(deviceId, extra = {}) {
  return { ...structuredClone(FIXTURE), notification_id: NOTIFICATION, device_id: deviceId, ...extra };
}

test('a push is shown with every field of the payload and reported as confirmed_delivered', async () => {
  const { service, deviceId, sw } = await setUp();
  await sw.dispatch('push', { data: pushData(payload(deviceId)) });

  assert.equal(sw.shown.length, 1);
  const { title, options } = plain(sw.shown[0]);
  assert.equal(title, 'Your order shipped');
  assert.deepEqual(options, {
    body: 'Arrives Tuesday',
    icon: 'https://cdn.example/icon.png', image: 'https://cdn.example/box.png', badge: 'https://cdn.example/badge.png',
    tag: 'order-42', renotify: true, requireInteraction: true,
    actions: [{ action: 'track', title: 'Track', icon: 'https://cdn.example/t.png' }, { action: 'later', title: 'Later' }],
    data: { v: 1, notification_id: NOTIFICATION, device_id: deviceId, url: 'https://shop.example/orders/42', data: { order_id: '42' } },
  });
  assert.equal(service.events.length, 1);
  const [event] = service.events;
  assert.equal(event.event_type, 'confirmed_delivered');
  assert.equal(event.notification_id, NOTIFICATION);
  assert.equal(event.device_id, deviceId);
  assert.equal(event.occurred_at, undefined, 'the service\'s clock, not the browser\'s');
  const request = service.requests.find((r) => r.path === '/v1/events');
  assert.equal(request.method, 'POST');
});

test('actions are capped at the browser\'s maximum and at 3', async () => {
  const { deviceId, sw } = await setUp();
  const four = [1, 2, 3, 4].map((i) => ({ action: 'a' + i, title: 'A' + i }));
  await sw.dispatch('push', { data: pushData(payload(deviceId, { actions: four })) });
  assert.deepEqual(plain(sw.shown[0].options.actions).map((a) => a.action), ['a1', 'a2'], 'Notification.maxActions is 2 here');
  sw.self.Notification.maxActions = 10;
  await sw.dispatch('push', { data: pushData(payload(deviceId, { actions: four })) });
  assert.deepEqual(plain(sw.shown[1].options.actions).map((a) => a.action), ['a1', 'a2', 'a3']);
});

test('a minimal payload shows title and body with no other option; silent means no sound, still shown', async () => {
  const { deviceId, sw } = await setUp();
  await sw.dispatch('push', { data: pushData({ v: 1, notification_id: NOTIFICATION, device_id: deviceId, title: 'T', body: 'B', silent: true, renotify: true }) });
  const { title, options } = plain(sw.shown[0]);
  assert.equal(title, 'T');
  assert.deepEqual(Object.keys(options).sort(), ['body', 'data', 'silent'], 'renotify needs a tag');
});

test('payload versions: none is v1, a newer one is still shown, a non-JSON push is shown as text', async () => {
  const { service, deviceId, sw } = await setUp();
  const old = payload(deviceId);
  delete old.v;
  await sw.dispatch('push', { data: pushData(old) });
  assert.equal(sw.shown[0].options.data.v, 1);
  assert.equal(sw.shown[0].title, 'Your order shipped');

  await sw.dispatch('push', { data: pushData({ v: 2, notification_id: NOTIFICATION, title: 'From the future', body: 'x', layout: {} }) });
  assert.equal(sw.shown[1].title, 'From the future');
  assert.equal(sw.shown[1].options.data.v, 2);
  assert.equal(service.events.at(-1).device_id, deviceId, 'without device_id in the payload: the stored device');

  await sw.dispatch('push', { data: pushData('plain text') });
  await sw.dispatch('push', { data: null });
  assert.equal(sw.shown.length, 4, 'every push shows a notification');
  assert.equal(sw.shown[2].options.body, 'plain text');
  assert.equal(sw.shown[3].title, 'shop.example');
  assert.equal(service.events.length, 2, 'nothing to report without a notification id');
});

test('a click on the body reports opened before opening the click URL', async () => {
  const { service, deviceId, sw } = await setUp();
  await sw.dispatch('push', { data: pushData(payload(deviceId)) });
  let closed = 0;
  const notification = { data: sw.shown[0].options.data, close: () => closed++ };
  await sw.dispatch('notificationclick', { notification, action: '' });
  assert.equal(closed, 1);
  assert.deepEqual(sw.log, ['event confirmed_delivered', 'event opened', 'open https://shop.example/orders/42']);
  const opened = service.events.at(-1);
  assert.equal(opened.event_type, 'opened');
  assert.equal(opened.notification_id, NOTIFICATION);
  assert.equal(opened.device_id, deviceId);
  assert.equal(opened.metadata, undefined);
});

test('a click on an action reports clicked with the action', async () => {
  const { service, deviceId, sw } = await setUp();
  await sw.dispatch('push', { data: pushData(payload(deviceId)) });
  await sw.dispatch('notificationclick', { notification: { data: sw.shown[0].options.data, close() {} }, action: 'track' });
  const clicked = service.events.at(-1);
  assert.equal(clicked.event_type, 'clicked');
  assert.deepEqual(clicked.metadata, { action: 'track' });
  assert.deepEqual(sw.log.slice(-2), ['event clicked', 'open https://shop.example/orders/42']);
});

test('a click focuses a tab already showing the click URL instead of opening another', async () => {
  const { deviceId, sw } = await setUp({ windows: ['https://shop.example/', 'https://shop.example/orders/42'] });
  await sw.dispatch('push', { data: pushData(payload(deviceId)) });
  await sw.dispatch('notificationclick', { notification: { data: sw.shown[0].options.data, close() {} }, action: '' });
  assert.deepEqual(sw.focused, ['https://shop.example/orders/42']);
  assert.deepEqual(sw.opened, []);
});

test('without a click URL a click focuses an open tab, else opens the worker\'s scope', async () => {
  const { deviceId, sw } = await setUp({ windows: ['https://shop.example/cart'] });
  await sw.dispatch('push', { data: pushData(payload(deviceId, { url: undefined })) });
  await sw.dispatch('notificationclick', { notification: { data: sw.shown[0].options.data, close() {} }, action: '' });
  assert.deepEqual(sw.focused, ['https://shop.example/cart']);

  const alone = worker((await setUp()).browser);
  await alone.dispatch('push', { data: pushData(payload(deviceId, { url: undefined })) });
  await alone.dispatch('notificationclick', { notification: { data: alone.shown[0].options.data, close() {} }, action: '' });
  assert.deepEqual(alone.opened, ['https://shop.example/']);
});

test('a slow events endpoint does not keep the tab from opening', async () => {
  const { service, deviceId, sw } = await setUp();
  await sw.dispatch('push', { data: pushData(payload(deviceId)) });
  const fetch = service.fetch;
  let release;
  service.fetch = (url, init) => new Promise((r) => { release = () => r(fetch(url, init)); });
  sw.self.fetch = service.fetch;
  const started = Date.now();
  const done = sw.dispatch('notificationclick', { notification: { data: sw.shown[0].options.data, close() {} }, action: '' });
  while (sw.opened.length === 0) await new Promise((r) => setTimeout(r, 20));
  assert.ok(Date.now() - started >= 600, 'it waited for the report first');
  release();
  await done;
  assert.equal(service.events.at(-1).event_type, 'opened', 'the report still completes');
});

test('closing a notification reports dismissed', async () => {
  const { service, deviceId, sw } = await setUp();
  await sw.dispatch('push', { data: pushData(payload(deviceId)) });
  await sw.dispatch('notificationclose', { notification: { data: sw.shown[0].options.data } });
  assert.equal(service.events.at(-1).event_type, 'dismissed');
  assert.equal(service.events.at(-1).device_id, deviceId);
});

test('pushsubscriptionchange registers the new subscription and deletes the old device', async () => {
  const { service, browser, deviceId, sw, sdk } = await setUp();
  await sdk.login('fay');
  const next = await (async () => {
    await browser.pushManager.current.unsubscribe();
    return browser.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: service.vapidKey });
  })();
  await sw.dispatch('pushsubscriptionchange', { oldSubscription: null, newSubscription: next });
  const enabled = service.enabledDevices();
  assert.equal(enabled.length, 1);
  assert.equal(enabled[0].endpoint, next.endpoint);
  assert.equal(enabled[0].user, 'fay');
  assert.equal(service.devices.get(deviceId).enabled, false);
  const stored = browser.indexedDB.value('device');
  assert.equal(stored.endpoint, next.endpoint);

  // the next page load finds everything in order: no registration
  service.requests.length = 0;
  const page = await browser.page();
  await page.init({ baseUrl: service.base, publicKey: service.publicKey });
  assert.equal(service.requests.filter((r) => r.path === '/v1/devices/register').length, 0);
});

test('pushsubscriptionchange without a new subscription subscribes again with the stored key', async () => {
  const { service, browser, sw } = await setUp();
  const old = browser.pushManager.current;
  await old.unsubscribe();
  await sw.dispatch('pushsubscriptionchange', { oldSubscription: old, newSubscription: null });
  assert.ok(browser.pushManager.current);
  assert.equal(service.enabledDevices().length, 1);
  assert.equal(service.enabledDevices()[0].endpoint, browser.pushManager.current.endpoint);
});
