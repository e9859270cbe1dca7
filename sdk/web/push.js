// Push Service web SDK (ES module, no dependencies). Docs: README.md here and docs/web-sdk.md.
//
// One device per browser: the device id, endpoint and keys last registered are kept in IndexedDB
// (database "push-service", store "state", shared with push-sw.js). Every page load re-syncs: a
// subscription that changed (Chromium never fires pushsubscriptionchange) or was made with another
// VAPID key than the app's is registered again, and a device replaced by a new endpoint is deleted,
// so the app holds exactly one enabled device for this browser.

export const VERSION = '1.0.0';
const DB = 'push-service';
const STORE = 'state';
const DAY = 86400000;

/** An answer of the service that is not a success: `status`, `code` and the service's `message`. */
export class PushServiceError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || 'HTTP ' + status);
    this.name = 'PushServiceError';
    this.status = status;
    this.code = e.code || null;
    this.details = e.details || [];
  }
}

// ---- storage (IndexedDB, readable by the service worker) ----

function openDb() {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

async function idb(mode, fn) {
  const db = await openDb();
  try {
    return await new Promise((resolve, reject) => {
      const tx = db.transaction(STORE, mode);
      const req = fn(tx.objectStore(STORE));
      tx.oncomplete = () => resolve(req && req.result);
      tx.onerror = tx.onabort = () => reject(tx.error);
    });
  } finally {
    db.close();
  }
}

const load = (key) => idb('readonly', (s) => s.get(key));
const save = (key, value) => idb('readwrite', (s) => s.put(value, key));
const drop = (key) => idb('readwrite', (s) => s.delete(key));

// ---- helpers ----

/** base64url (no padding) of bytes, as the service and PushSubscription.toJSON() write keys. */
export function toBase64Url(buffer) {
  if (!buffer) return null;
  const bytes = new Uint8Array(buffer);
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

export function fromBase64Url(text) {
  const s = atob(text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4));
  const bytes = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
  return bytes;
}

/** The subscription as the service stores it: endpoint and the two keys, nothing else. */
function tokenOf(sub) {
  const json = sub.toJSON();
  return { endpoint: json.endpoint, keys: { p256dh: json.keys.p256dh, auth: json.keys.auth } };
}

function supported() {
  return typeof navigator !== 'undefined' && 'serviceWorker' in navigator &&
    typeof PushManager !== 'undefined' && typeof Notification !== 'undefined' && typeof indexedDB !== 'undefined';
}

// ---- the client ----

export class PushClient extends EventTarget {
  constructor() {
    super();
    this._config = null;
    this._registration = null;
    this._queue = Promise.resolve();
    this._device = null;
  }

  /** `default`, `granted` or `denied` (the browser's Notification.permission), or `unsupported`. */
  get permission() {
    return supported() ? Notification.permission : 'unsupported';
  }

  /** The registered device's id, or null before subscribe() / after unsubscribe(). */
  get deviceId() {
    return this._device ? this._device.deviceId : null;
  }

  get supported() {
    return supported();
  }

  /**
   * Registers the service worker and re-syncs the subscription (no prompt: only when permission is
   * already granted). Call on every page load. Resolves to the device id or null.
   */
  init({ baseUrl, publicKey, serviceWorker = '/push-sw.js', scope } = {}) {
    if (!baseUrl || !/^https?:\/\//.test(baseUrl)) throw new TypeError('init: baseUrl must be the service\'s http(s) URL');
    if (!publicKey || !publicKey.startsWith('ps_public_')) {
      throw new TypeError('init: publicKey must be a public client key (ps_public_…); never put a server key in a page');
    }
    this._config = { baseUrl: baseUrl.replace(/\/+$/, ''), publicKey };
    return this._serial(async () => {
      if (!supported()) return null;
      await save('config', this._config);
      this._device = (await load('device')) || null;
      this._registration = await navigator.serviceWorker.register(serviceWorker, scope ? { scope } : undefined);
      await this._sync(false);
      return this.deviceId;
    });
  }

  /**
   * Asks for permission (call it from a user gesture: a click handler; browsers refuse or
   * silently deny prompts without one), subscribes and registers the device. Resolves to the
   * device id, or null when permission is not granted.
   */
  subscribe() {
    this._ready();
    // requestPermission first, synchronously in the gesture, before any other await
    const asked = Notification.permission === 'default' ? Notification.requestPermission() : Promise.resolve(Notification.permission);
    return this._serial(async () => {
      if ((await asked) !== 'granted') return null;
      await this._sync(true);
      return this.deviceId;
    });
  }

  /** Unsubscribes the browser and deletes the device; login and tags are forgotten too. */
  unsubscribe() {
    this._ready();
    return this._serial(async () => {
      const sub = await this._subscription();
      if (sub) await sub.unsubscribe();
      await this._forget('unsubscribed');
    });
  }

  /** Attaches this browser's device to a user of yours (`identityToken` when identity verification is on). */
  login(externalUserId, identityToken) {
    this._ready();
    if (typeof externalUserId !== 'string' || !externalUserId) throw new TypeError('login: externalUserId must be a non-empty string');
    return this._serial(async () => {
      const device = this._device || {};
      this._device = { ...device, externalUserId };
      if (!device.deviceId) return this._store(null);
      const sub = await this._subscription();
      if (!sub) return this._store(null);
      await this._register(sub, { external_user_id: externalUserId, ...(identityToken ? { identity_token: identityToken } : {}) });
    });
  }

  /**
   * Detaches this browser from the user. The API keeps a device's user when it registers without
   * one, so the browser gets a fresh subscription (no prompt) and a new anonymous device; the old
   * device is deleted.
   */
  logout() {
    this._ready();
    return this._serial(async () => {
      if (!this._device || !this._device.externalUserId) return;
      const old = this._device;
      this._device = { tags: {} };
      const sub = await this._subscription();
      if (!sub || Notification.permission !== 'granted') {
        if (old.deviceId) await this._delete(old.deviceId);
        return this._store(null);
      }
      await sub.unsubscribe();
      const fresh = await this._newSubscription(await this._appKey());
      await this._register(fresh, {}, old.deviceId);
      this._emit('logout');
    });
  }

  /** Merges tags into the user's tags (values: string, number, boolean; null sets ""). */
  setTags(tags) {
    this._ready();
    if (!tags || typeof tags !== 'object' || Array.isArray(tags)) throw new TypeError('setTags: tags must be an object');
    return this._serial(async () => {
      const device = this._device || {};
      this._device = { ...device, tags: { ...(device.tags || {}), ...tags } };
      const sub = device.deviceId ? await this._subscription() : null;
      if (!sub) return this._store(null);
      await this._register(sub, { tags });
    });
  }

  // ---- internals ----

  _ready() {
    if (!this._config) throw new Error('call init({ baseUrl, publicKey }) first');
    if (!supported()) throw new Error('this browser does not support Web Push (service workers, Push API, Notifications)');
  }

  _serial(task) {
    const run = this._queue.then(task);
    this._queue = run.catch(() => {});
    return run;
  }

  async _api(method, path, body) {
    const res = await fetch(this._config.baseUrl + path, {
      method,
      headers: { Authorization: 'Bearer ' + this._config.publicKey, ...(body ? { 'Content-Type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    const json = text ? JSON.parse(text) : null;
    if (!res.ok) throw new PushServiceError(res.status, json);
    return json;
  }

  async _appKey() {
    return (await this._api('GET', '/v1/app/webpush')).vapid_public_key;
  }

  async _subscription() {
    const reg = this._registration || (await navigator.serviceWorker.ready);
    return reg.pushManager.getSubscription();
  }

  _newSubscription(appKey) {
    const reg = this._registration;
    return reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: fromBase64Url(appKey) });
  }

  /**
   * The re-sync: the browser's subscription against what was registered. `create`: subscribe when
   * there is no subscription (subscribe()); otherwise only a browser that subscribed before (a
   * stored device) with permission still granted gets a new one.
   */
  async _sync(create) {
    const stored = this._device;
    const permission = Notification.permission;
    if (permission === 'denied') {
      if (stored && stored.deviceId) await this._forget('permission_denied');
      return;
    }
    let sub = await this._subscription();
    if (!sub && !create && stored && stored.deviceId && permission !== 'granted') return this._forget('permission_reset');
    if (!sub && !(create || (stored && stored.deviceId && permission === 'granted'))) return;
    const appKey = await this._appKey();
    if (sub && toBase64Url(sub.options && sub.options.applicationServerKey) !== appKey) {
      // made with another VAPID key: push services refuse the app's key for it (403); start over
      await sub.unsubscribe();
      sub = null;
    }
    if (!sub) sub = await this._newSubscription(appKey);
    const token = tokenOf(sub);
    const same = stored && stored.deviceId && stored.endpoint === token.endpoint &&
      stored.p256dh === token.keys.p256dh && stored.auth === token.keys.auth;
    if (same && Date.now() - (stored.registeredAt || 0) < DAY) return;
    await this._register(sub, {}, same ? null : stored && stored.deviceId);
  }

  /**
   * POST /v1/devices/register. A known endpoint refreshes its device (200); a new one makes a
   * device (201), and the device it replaces (`previous`) is deleted. A new device gets the user
   * and tags this browser had.
   */
  async _register(sub, extra, previous) {
    const token = tokenOf(sub);
    const device = this._device || {};
    const body = { platform: 'web', push_token: JSON.stringify(token), ...browserFacts(), ...extra };
    const fresh = !device.deviceId || device.endpoint !== token.endpoint;
    if (fresh) {
      if (device.externalUserId && !body.external_user_id) body.external_user_id = device.externalUserId;
      if (device.tags && Object.keys(device.tags).length && !body.tags) body.tags = device.tags;
    }
    let answer;
    try {
      answer = await this._api('POST', '/v1/devices/register', body);
    } catch (e) {
      // identity verification on and no token for a user carried over: register anonymously
      if (!(e.status === 422 && body.external_user_id && !extra.external_user_id)) throw e;
      delete body.external_user_id;
      device.externalUserId = undefined;
      answer = await this._api('POST', '/v1/devices/register', body);
    }
    const old = previous !== undefined ? previous : device.deviceId;
    this._device = {
      ...device, deviceId: answer.device_id, endpoint: token.endpoint, p256dh: token.keys.p256dh, auth: token.keys.auth,
      vapidKey: toBase64Url(sub.options && sub.options.applicationServerKey), registeredAt: Date.now(),
    };
    if (old && old !== answer.device_id) await this._delete(old);
    await this._store(fresh ? 'subscribed' : null);
  }

  async _delete(deviceId) {
    try {
      await this._api('DELETE', '/v1/devices/' + encodeURIComponent(deviceId));
    } catch (e) {
      if (e.status !== 404) throw e; // 404: already disabled or gone
    }
  }

  async _forget(reason) {
    const old = this._device;
    this._device = null;
    if (old && old.deviceId) await this._delete(old.deviceId);
    await drop('device');
    this._emit(reason);
  }

  async _store(reason) {
    await save('device', this._device);
    if (reason) this._emit(reason);
  }

  _emit(reason) {
    this.dispatchEvent(new CustomEvent('subscriptionchange', {
      detail: { subscribed: !!(this._device && this._device.deviceId), deviceId: this.deviceId, reason },
    }));
  }
}

function browserFacts() {
  const facts = {};
  try {
    const tz = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (tz && tz.length <= 64) facts.timezone = tz;
  } catch (ignored) { /* no Intl time zone */ }
  const locale = typeof navigator !== 'undefined' && navigator.language;
  if (locale && /^[A-Za-z]{2,3}([-_][A-Za-z0-9]{1,8})*$/.test(locale) && locale.length <= 20) facts.locale = locale;
  return facts;
}

const push = new PushClient();
export default push;
export const init = (options) => push.init(options);
export const subscribe = () => push.subscribe();
export const unsubscribe = () => push.unsubscribe();
export const login = (externalUserId, identityToken) => push.login(externalUserId, identityToken);
export const logout = () => push.logout();
export const setTags = (tags) => push.setTags(tags);
