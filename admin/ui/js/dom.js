// DOM helpers. Every piece of text reaches the page through text nodes (never innerHTML), so
// job names, params, messages and log content are always shown as text, never parsed as HTML.

/** Builds an element: `h('button', {class: 'btn', onclick: fn}, 'Save')`. */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2), value);
    } else if (key === 'class') {
      el.className = value;
    } else if (key === 'dataset') {
      Object.assign(el.dataset, value);
    } else if (key in PROPERTIES) {
      el[PROPERTIES[key]] = value;
    } else {
      el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

// Attributes that must be set as properties to take effect after creation.
const PROPERTIES = { value: 'value', checked: 'checked', selected: 'selected', disabled: 'disabled' };

/** Appends children: strings and numbers become text nodes; arrays are flattened; null skipped. */
export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replaces all children of `el`. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/**
 * Upstream's trigger/handle messages use `<br>` as a line break. Split on it and show each
 * part as text with real line breaks between; every other tag stays literal text.
 */
export function brText(text) {
  const parts = String(text ?? '').split(/<br\s*\/?>/i);
  const out = [];
  parts.forEach((part, i) => {
    if (i > 0) out.push(document.createElement('br'));
    out.push(document.createTextNode(part));
  });
  return out;
}

const pad = (n, w = 2) => String(n).padStart(w, '0');

/** Epoch milliseconds as `yyyy-MM-dd HH:mm:ss` in the viewer's zone; empty for none. */
export function formatTime(ms) {
  if (ms === null || ms === undefined || ms <= 0) return '';
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** A date as `YYYY-MM-DD` (local). */
export function formatDate(d) {
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

/** A date as a `datetime-local` input value (local, seconds). */
export function formatLocalInput(d) {
  return `${formatDate(d)}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** Bytes in a readable unit. */
export function formatSize(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(2)} MiB`;
}

/** Reads the query part of the current hash route (`#/logs?jobId=3`). */
export function routeQuery() {
  const hash = location.hash || '';
  const i = hash.indexOf('?');
  return new URLSearchParams(i >= 0 ? hash.slice(i + 1) : '');
}

/** A hash link to `path` with `query` (empty values dropped). */
export function routeHref(path, query = {}) {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null && v !== '') params.set(k, v);
  }
  const qs = params.toString();
  return `#${path}${qs ? `?${qs}` : ''}`;
}
