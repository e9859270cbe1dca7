// The demo page's script (no inline script: the page's CSP is script-src 'self').
import push from './push.js';

const $ = (id) => document.getElementById(id);
const baseUrl = $('base-url');
const publicKey = $('public-key');
const serverKey = $('server-key');
let started = null;

function log(text, error) {
  const item = document.createElement('li');
  item.textContent = new Date().toLocaleTimeString() + ' ' + text;
  if (error) item.className = 'error';
  $('log').prepend(item);
}

function describe(e) {
  return e && e.name === 'PushServiceError' ? `${e.status} ${e.code}: ${e.message}` : String(e && e.message || e);
}

function show() {
  $('permission').textContent = push.permission;
  $('device').textContent = push.deviceId || 'none';
  $('unsubscribe').disabled = !push.deviceId;
  $('send').disabled = !push.deviceId;
}

/** init() once per page with the typed settings; synchronous up to the SDK's queue, so it can run in a click. */
function start() {
  const settings = { baseUrl: baseUrl.value.trim(), publicKey: publicKey.value.trim() };
  if (started && started.baseUrl === settings.baseUrl && started.publicKey === settings.publicKey) return started.ready;
  localStorage.setItem('push-demo', JSON.stringify(settings));
  const ready = push.init({ ...settings, serviceWorker: './push-sw.js', scope: './' });
  started = { ...settings, ready };
  ready.then((id) => { log(id ? 'registered device ' + id : 'service worker ready; not subscribed'); show(); },
    (e) => log('init failed: ' + describe(e), true));
  return ready;
}

baseUrl.value = location.origin + location.pathname.replace(/\/sdk\/v1\/demo$/, '');
const saved = JSON.parse(localStorage.getItem('push-demo') || 'null');
if (saved) {
  baseUrl.value = saved.baseUrl;
  publicKey.value = saved.publicKey;
}
if (!push.supported) $('unsupported').hidden = false;
push.addEventListener('subscriptionchange', (e) => { log(`subscription: ${e.detail.reason}`); show(); });
show();
if (push.supported && saved && saved.publicKey) {
  try { start(); } catch (e) { log(describe(e), true); }
}

$('subscribe').addEventListener('click', () => {
  try {
    start();
    push.subscribe().then((id) => {
      log(id ? 'subscribed: device ' + id : 'permission not granted (' + push.permission + ')', !id);
      show();
    }, (e) => log('subscribe failed: ' + describe(e), true));
  } catch (e) {
    log(describe(e), true);
  }
});

$('unsubscribe').addEventListener('click', () => {
  push.unsubscribe().then(() => { log('unsubscribed; the device is deleted'); show(); },
    (e) => log('unsubscribe failed: ' + describe(e), true));
});

async function service(method, path, body, extra) {
  const res = await fetch(baseUrl.value.trim().replace(/\/+$/, '') + path, {
    method,
    headers: { Authorization: 'Bearer ' + serverKey.value.trim(), ...(body ? { 'Content-Type': 'application/json' } : {}), ...extra },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json().catch(() => null);
  if (!res.ok) throw new Error(`${res.status} ${json && json.error ? json.error.code + ': ' + json.error.message : ''}`);
  return json;
}

$('send').addEventListener('click', async () => {
  if (!serverKey.value.trim().startsWith('ps_live_')) return log('paste a server key (ps_live_…) first', true);
  const content = {
    title: 'Test push', body: 'Sent from the demo page at ' + new Date().toLocaleTimeString(),
    target: { type: 'device', device_id: push.deviceId },
    actions: [{ id: 'yes', text: 'It works' }, { id: 'no', text: 'Not shown right' }],
    data: { from: 'sdk-demo' },
  };
  if (location.protocol === 'https:') content.click_url = location.href; // the service accepts only https click URLs
  try {
    const sent = await service('POST', '/v1/notifications', content, { 'Idempotency-Key': crypto.randomUUID() });
    log('notification ' + sent.notification_id + ' ' + sent.status);
    watch(sent.notification_id);
  } catch (e) {
    log('send failed: ' + describe(e), true);
  }
});

/** The push's events for a minute (needs notifications:read; without it nothing is shown). */
async function watch(id) {
  const seen = new Set();
  for (let i = 0; i < 30; i++) {
    await new Promise((r) => setTimeout(r, 2000));
    try {
      const page = await service('GET', `/v1/notifications/${id}/events?limit=50`);
      for (const event of page.data) {
        const key = event.event_id || JSON.stringify(event);
        if (seen.has(key)) continue;
        seen.add(key);
        log(`event ${event.event_type}` + (event.properties && event.properties.action ? ' (' + event.properties.action + ')' : ''));
      }
    } catch (e) {
      return log('cannot read the events: ' + describe(e), true);
    }
  }
}
