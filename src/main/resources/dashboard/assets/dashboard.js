// The dashboard's one script of its own (CSP: script-src 'self', nothing inline).
// htmx's requests carry the page's CSRF token, as forms do with their hidden field.
document.addEventListener('htmx:configRequest', (event) => {
  const token = document.querySelector('meta[name="csrf-token"]');
  if (token) event.detail.headers['X-CSRF-TOKEN'] = token.content;
});
