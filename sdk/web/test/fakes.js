// Fakes of the browser and of the Push Service's HTTP API for the SDK's unit tests (no packages).
// The fake service follows docs/api-decisions.md: a web device is identified by its endpoint
// (a known endpoint answers 200 with the same device_id and refreshes it, a new one 201), DELETE
// disables (404 when already disabled), a device registered without external_user_id keeps its user.
import { readFileSync } from 'node:fs';
import vm from 'node:vm';
import { webcrypto } from 'node:crypto';

const tick = () => new Promise((r) => setTimeout(r, 0));

/** A minimal IndexedDB: one database per name, object stores as Maps, values structured-cloned. */
export class FakeIndexedDB {
  constructor() { this.dbs = new Map(); }
  open(name) {
    const req = {};
    setTimeout(() => {
      let stores = this.dbs.get(name);
      const fresh = !stores;
      if (fresh) { stores = new Map(); this.dbs.set(name, stores); }
      const db = {
        createObjectStore: (s) => stores.set(s, new Map()),
        close() {},
        transaction: (s) => {
          const map = stores.get(s);
          const tx = {};
          let pending = 0;
          const op = (fn) => {
            const r = {};
            pending++;
            setTimeout(() => {
              r.result = fn();
              if (--pending === 0) setTimeout(() => tx.oncomplete && tx.oncomplete());
            });
            return r;
          };
          tx.objectStore = () => ({
            get: (k) => op(() => (map.has(k) ? structuredClone(map.get(k)) : undefined)),
            put: (v, k) => op(() => { map.set(k, structuredClone(v)); return k; }),
            delete: (k) => op(() => { map.delete(k); }),
          });
          return tx;
        },
      };
      req.result = db;
      if (fresh && req.onupgradeneeded) req.onupgradeneeded();
      req.onsuccess && req.onsuccess();
    });
    return req;
  }
  value(key) {
    const store = this.dbs.get('push-service')?.get('state');
    return store ? store.get(key) : undefined;
  }
}

function b64url(bytes) {
  return Buffer.from(bytes).toString('base64url');
}

let endpoints = 0;

/** A PushSubscription: a new endpoint and keys on every subscribe, as browsers do. */
export class FakeSubscription {
  constructor(manager, key) {
    this.manager = manager;
    this.endpoint = 'https://push.example.net/wpush/' + (++endpoints);
    this.options = { userVisibleOnly: true, applicationServerKey: key.buffer.slice(key.byteOffset, key.byteOffset + key.byteLength) };
    this.p256dh = b64url(webcrypto.getRandomValues(new Uint8Array(65)));
    this.auth = b64url(webcrypto.getRandomValues(new Uint8Array(16)));
  }
  toJSON() {
    return { endpoint: this.endpoint, expirationTime: null, keys: { p256dh: this.p256dh, auth: this.auth } };
  }
  async unsubscribe() {
    if (this.manager.current === this) this.manager.current = null;
    return true;
  }
}

export class FakePushManager {
  constructor() { this.current = null; this.subscribes = 0; }
  async getSubscription() { return this.current; }
  async subscribe(options) {
    if (!options.userVisibleOnly) throw new Error('userVisibleOnly must be true');
    let key = options.applicationServerKey;
    if (typeof key === 'string') key = Buffer.from(key, 'base64url');
    const k = new Uint8Array(key);
    if (this.current) {
      if (b64url(new Uint8Array(this.current.options.applicationServerKey)) !== b64url(k)) {
        const e = new Error('A subscription with a different applicationServerKey already exists');
        e.name = 'InvalidStateError';
        throw e;
      }
      return this.current;
    }
    this.subscribes++;
    this.current = new FakeSubscription(this, k);
    return this.current;
  }
}

/** The Push Service's routes the SDK calls, in memory. */
export class FakeService {
  constructor() {
    this.base = 'https://push.example.com';
    this.publicKey = 'ps_public_' + 'k'.repeat(43);
    this.vapidKey = b64url(webcrypto.getRandomValues(new Uint8Array(65)));
    this.devices = new Map(); // device_id -> {endpoint, token, enabled, user, tags}
    this.events = [];
    this.requests = [];
    this.fetch = this.fetch.bind(this);
  }
  enabledDevices() { return [...this.devices.values()].filter((d) => d.enabled); }
  rotateVapidKey() { this.vapidKey = b64url(webcrypto.getRandomValues(new Uint8Array(65))); }
  async fetch(url, init = {}) {
    const method = init.method || 'GET';
    const path = url.startsWith(this.base) ? url.slice(this.base.length) : url;
    const body = init.body ? JSON.parse(init.body) : null;
    this.requests.push({ method, path, body });
    const answer = (status, json) => ({ ok: status < 300, status, text: async () => (json ? JSON.stringify(json) : '') });
    if ((init.headers || {}).Authorization !== 'Bearer ' + this.publicKey) return answer(401, { error: { code: 'unauthorized', message: 'no key' } });
    if (body && (init.headers || {})['Content-Type'] !== 'application/json') return answer(415, { error: { code: 'unsupported_media_type' } });
    if (method === 'GET' && path === '/v1/app/webpush') return answer(200, { vapid_public_key: this.vapidKey });
    if (method === 'POST' && path === '/v1/devices/register') {
      if (body.platform !== 'web') return answer(422, { error: { code: 'validation_failed', message: 'platform' } });
      const token = JSON.parse(body.push_token);
      if (!token.endpoint || !token.keys?.p256dh || !token.keys?.auth || Object.keys(token).length !== 2) {
        return answer(422, { error: { code: 'validation_failed', message: 'push_token' } });
      }
      if (this.identityRequired && body.external_user_id && !body.identity_token) {
        return answer(422, { error: { code: 'validation_failed', message: 'identity_token is required' } });
      }
      let id = [...this.devices.keys()].find((k) => this.devices.get(k).endpoint === token.endpoint);
      const created = !id;
      if (created) {
        id = webcrypto.randomUUID();
        this.devices.set(id, { endpoint: token.endpoint, user: null, tags: {} });
      }
      const d = this.devices.get(id);
      Object.assign(d, { token, enabled: true, locale: body.locale ?? d.locale, timezone: body.timezone ?? d.timezone });
      if (body.external_user_id) d.user = body.external_user_id;
      if (body.tags) d.tags = { ...d.tags, ...body.tags };
      return answer(created ? 201 : 200, { device_id: id, platform: 'web', enabled: true, external_user_id: d.user });
    }
    const del = path.match(/^\/v1\/devices\/([0-9a-f-]{36})$/);
    if (method === 'DELETE' && del) {
      const d = this.devices.get(del[1]);
      if (!d || !d.enabled) return answer(404, { error: { code: 'not_found', message: 'no such device' } });
      d.enabled = false;
      return answer(200, { device_id: del[1], enabled: false });
    }
    if (method === 'POST' && path === '/v1/events') {
      this.events.push(body);
      return answer(202, { event_id: webcrypto.randomUUID() });
    }
    return answer(404, { error: { code: 'not_found', message: path } });
  }
}

/**
 * A browser profile: one origin's IndexedDB, push subscription, permission and service worker.
 * `page()` loads push.js afresh, as a page load does; `worker()` runs push-sw.js in its own context.
 */
export class FakeBrowser {
  constructor(service, { permission = 'default', grant = 'granted' } = {}) {
    this.service = service;
    this.indexedDB = new FakeIndexedDB();
    this.pushManager = new FakePushManager();
    this.permission = permission;
    this.grant = grant;
    this.prompts = 0;
    this.registration = { pushManager: this.pushManager, scope: 'https://shop.example/' };
    this.loads = 0;
  }
  install() {
    const browser = this;
    globalThis.indexedDB = this.indexedDB;
    globalThis.PushManager = FakePushManager;
    globalThis.fetch = this.service.fetch;
    globalThis.Notification = {
      get permission() { return browser.permission; },
      async requestPermission() { browser.prompts++; browser.permission = browser.grant; return browser.permission; },
    };
    Object.defineProperty(globalThis, 'navigator', {
      configurable: true,
      value: {
        language: 'fr-CA',
        serviceWorker: {
          registered: [],
          async register(url, options) { this.registered.push({ url, options }); return browser.registration; },
          get ready() { return Promise.resolve(browser.registration); },
        },
      },
    });
  }
  /** A page load: the browser's globals, then a fresh instance of the module. */
  async page() {
    this.install();
    const url = new URL('../push.js', import.meta.url);
    url.search = '?load=' + (++FakeBrowser.loads);
    return import(url.href);
  }
}
FakeBrowser.loads = 0;

/** push-sw.js in a context of its own, with self.registration, clients and the browser's IndexedDB. */
export function worker(browser, { windows = [] } = {}) {
  const listeners = {};
  const shown = [];
  const opened = [];
  const focused = [];
  const log = [];
  const clients = {
    async matchAll() { return windows.map((w) => ({ url: w, focus: async () => { log.push('focus ' + w); focused.push(w); } })); },
    async openWindow(url) { log.push('open ' + url); opened.push(url); return {}; },
  };
  const registration = {
    scope: 'https://shop.example/',
    pushManager: browser.pushManager,
    async showNotification(title, options) { shown.push({ title, options }); },
    async getNotifications() { return shown.map((n) => ({ title: n.title, ...n.options })); },
  };
  const fetch = async (url, init) => {
    const body = init.body ? JSON.parse(init.body) : null;
    if (body && body.event_type) log.push('event ' + body.event_type);
    return browser.service.fetch(url, init);
  };
  const self = {
    addEventListener: (type, fn) => { listeners[type] = fn; },
    registration, clients, fetch, indexedDB: browser.indexedDB,
    location: { href: 'https://shop.example/push-sw.js' },
    Notification: { maxActions: 2 },
  };
  const context = vm.createContext({ self, URL, Promise, setTimeout, console, Date, JSON, Object, Array, Math, String });
  vm.runInContext(readFileSync(new URL('../push-sw.js', import.meta.url), 'utf8'), context, { filename: 'push-sw.js' });
  /** Dispatches an ExtendableEvent and waits for everything passed to waitUntil. */
  async function dispatch(type, init) {
    const waits = [];
    const event = { ...init, waitUntil: (p) => waits.push(p) };
    listeners[type](event);
    await Promise.all(waits);
    return event;
  }
  return { dispatch, shown, opened, focused, log, self, listeners };
}

/** A push's decrypted payload as PushEvent.data. */
export function pushData(payload) {
  const text = typeof payload === 'string' ? payload : JSON.stringify(payload);
  return { json: () => JSON.parse(text), text: () => text };
}

export { tick };
