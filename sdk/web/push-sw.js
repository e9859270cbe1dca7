/* Push Service web SDK: the service worker (a classic script; importScripts() it from your own
 * worker or serve it as is). It shows every push the service sends (payload format v1,
 * docs/web-sdk.md), opens the click URL, reports confirmed_delivered, opened, clicked and dismissed
 * to POST /v1/events, and re-registers when the browser replaces the subscription. The service's
 * URL and public key come from IndexedDB ("push-service"/"state"), written by push.js's init(). */
(function (self) {
  'use strict';

  var FORMAT = 1; // the newest payload version this worker knows
  var MAX_ACTIONS = 3;
  var REPORT_BEFORE_OPEN_MS = 700; // browsers allow openWindow only shortly after the click

  function db() {
    return new Promise(function (resolve, reject) {
      var req = self.indexedDB.open('push-service', 1);
      req.onupgradeneeded = function () { req.result.createObjectStore('state'); };
      req.onsuccess = function () { resolve(req.result); };
      req.onerror = function () { reject(req.error); };
    });
  }

  function idb(mode, fn) {
    return db().then(function (d) {
      return new Promise(function (resolve, reject) {
        var tx = d.transaction('state', mode);
        var req = fn(tx.objectStore('state'));
        tx.oncomplete = function () { d.close(); resolve(req && req.result); };
        tx.onerror = tx.onabort = function () { d.close(); reject(tx.error); };
      });
    });
  }

  function load(key) { return idb('readonly', function (s) { return s.get(key); }); }
  function save(key, value) { return idb('readwrite', function (s) { return s.put(value, key); }); }

  function api(config, method, path, body) {
    return self.fetch(config.baseUrl + path, {
      method: method,
      headers: body ? { Authorization: 'Bearer ' + config.publicKey, 'Content-Type': 'application/json' }
        : { Authorization: 'Bearer ' + config.publicKey },
      body: body ? JSON.stringify(body) : undefined,
    }).then(function (res) {
      return res.text().then(function (text) {
        if (!res.ok) throw new Error('Push Service answered ' + res.status + ' to ' + method + ' ' + path);
        return text ? JSON.parse(text) : null;
      });
    });
  }

  /** The decrypted payload as an object; a payload that is not JSON becomes its text as the body. */
  function parse(data) {
    if (!data) return {};
    try {
      var json = data.json();
      return json && typeof json === 'object' ? json : { body: String(json) };
    } catch (e) {
      return { body: data.text() };
    }
  }

  /**
   * showNotification's title and options from a payload. Version 1 and older payloads (no "v") are
   * read as documented; a newer version is shown from the v1 keys it still carries (title, body),
   * so a push is never dropped: browsers punish pushes that show nothing.
   */
  function present(p) {
    var title = typeof p.title === 'string' && p.title ? p.title : (self.registration.scope ? new URL(self.registration.scope).host : 'Notification');
    var options = {
      body: typeof p.body === 'string' ? p.body : '',
      data: {
        v: typeof p.v === 'number' ? p.v : FORMAT, notification_id: p.notification_id || null,
        device_id: p.device_id || null, url: p.url || null, data: p.data || null,
      },
    };
    if (p.icon) options.icon = p.icon;
    if (p.image) options.image = p.image;
    if (p.badge) options.badge = p.badge;
    if (p.tag) {
      options.tag = p.tag;
      if (p.renotify) options.renotify = true; // only allowed with a tag
    }
    if (p.require_interaction) options.requireInteraction = true;
    if (p.silent) options.silent = true; // no sound or vibration; the notification is still shown
    if (Array.isArray(p.actions) && p.actions.length) {
      var max = Math.min(MAX_ACTIONS, (self.Notification && self.Notification.maxActions) || MAX_ACTIONS);
      options.actions = p.actions.filter(function (a) { return a && a.action && a.title; }).slice(0, max)
        .map(function (a) { return a.icon ? { action: a.action, title: a.title, icon: a.icon } : { action: a.action, title: a.title }; });
    }
    return { title: title, options: options };
  }

  /** POST /v1/events for a notification; nothing without a notification id or the service's address. */
  function report(type, data, metadata) {
    if (!data || !data.notification_id) return Promise.resolve();
    return Promise.all([load('config'), load('device')]).then(function (r) {
      var config = r[0], device = r[1];
      if (!config) return;
      var body = {
        event_type: type, notification_id: data.notification_id,
        device_id: data.device_id || (device && device.deviceId) || undefined,
      }; // no occurred_at: sent at once, and a browser clock 5 minutes fast would get the event refused
      if (metadata) body.metadata = metadata;
      return api(config, 'POST', '/v1/events', body);
    }).catch(function (e) { console.warn('push-sw: could not report ' + type, e); });
  }

  self.addEventListener('push', function (event) {
    var shown = present(parse(event.data));
    event.waitUntil(self.registration.showNotification(shown.title, shown.options).then(function () {
      return report('confirmed_delivered', shown.options.data);
    }));
  });

  function sameUrl(a, b) {
    try { return new URL(a).href === new URL(b, self.location.href).href; } catch (e) { return false; }
  }

  self.addEventListener('notificationclick', function (event) {
    var n = event.notification;
    var data = n.data || {};
    n.close();
    var reported = event.action
      ? report('clicked', data, { action: event.action })
      : report('opened', data);
    // the event first (bounded: the browser's permission to open a window does not last), then the tab
    var first = Promise.race([reported, new Promise(function (r) { setTimeout(r, REPORT_BEFORE_OPEN_MS); })]);
    event.waitUntil(Promise.all([reported, first.then(function () {
      return self.clients.matchAll({ type: 'window', includeUncontrolled: true }).then(function (list) {
        var url = data.url;
        for (var i = 0; i < list.length; i++) {
          if (url ? sameUrl(list[i].url, url) : true) return list[i].focus();
        }
        return self.clients.openWindow(url || self.registration.scope);
      });
    })]));
  });

  self.addEventListener('notificationclose', function (event) {
    event.waitUntil(report('dismissed', event.notification.data || {}));
  });

  /** Where it fires (Firefox, not Chromium): register the new subscription; push.js re-syncs on page load too. */
  self.addEventListener('pushsubscriptionchange', function (event) {
    event.waitUntil(Promise.all([load('config'), load('device')]).then(function (r) {
      var config = r[0], device = r[1];
      if (!config || !device || !device.deviceId) return;
      var next = event.newSubscription ? Promise.resolve(event.newSubscription)
        : self.registration.pushManager.subscribe((event.oldSubscription && event.oldSubscription.options) ||
          { userVisibleOnly: true, applicationServerKey: device.vapidKey });
      return next.then(function (sub) {
        var json = sub.toJSON();
        var token = { endpoint: json.endpoint, keys: { p256dh: json.keys.p256dh, auth: json.keys.auth } };
        var body = { platform: 'web', push_token: JSON.stringify(token) };
        if (device.externalUserId) body.external_user_id = device.externalUserId;
        if (device.tags && Object.keys(device.tags).length) body.tags = device.tags;
        return api(config, 'POST', '/v1/devices/register', body).then(function (answer) {
          var old = device.deviceId;
          device.deviceId = answer.device_id;
          device.endpoint = token.endpoint;
          device.p256dh = token.keys.p256dh;
          device.auth = token.keys.auth;
          device.registeredAt = Date.now();
          return save('device', device).then(function () {
            if (old !== answer.device_id) {
              return api(config, 'DELETE', '/v1/devices/' + encodeURIComponent(old)).catch(function () { /* gone already */ });
            }
          });
        });
      });
    }).catch(function (e) { console.warn('push-sw: could not re-register the new subscription', e); }));
  });

  self.pushService = { present: present, parse: parse, FORMAT: FORMAT };
})(self);
