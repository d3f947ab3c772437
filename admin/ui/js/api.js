// The UI's only way to the admin: the JSON management API under /api/v1 (docs/api.md).
// The session cookie is HttpOnly, so login state comes from GET /api/v1/session; every
// non-GET request carries the CSRF token that login and GET /session hand out.

import { t } from './i18n.js';

let csrfToken = null;
let unauthorized = () => {};

/** An API answer other than 2xx, with upstream-style `{code, msg}` from the body. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export function setCsrfToken(token) {
  csrfToken = token || null;
}

/** Called when an API call answers 401 (the session ended): the app shows the login page. */
export function onUnauthorized(handler) {
  unauthorized = handler;
}

/**
 * Calls `method path` (relative to /api/v1). `query` values that are empty are left out;
 * `body` is sent as JSON, or `raw` with `contentType` as is (the Wasm upload).
 */
export async function api(method, path, { query, body, raw, contentType } = {}) {
  const url = new URL(`/api/v1${path}`, location.origin);
  for (const [k, v] of Object.entries(query || {})) {
    if (v !== undefined && v !== null && v !== '') url.searchParams.set(k, v);
  }
  const headers = { Accept: 'application/json' };
  const init = { method, headers, credentials: 'same-origin' };
  if (method !== 'GET' && csrfToken) headers['X-CSRF-Token'] = csrfToken;
  if (raw !== undefined) {
    init.body = raw;
    headers['Content-Type'] = contentType;
  } else if (body !== undefined) {
    init.body = JSON.stringify(body);
    headers['Content-Type'] = 'application/json';
  }
  let response;
  try {
    response = await fetch(url, init);
  } catch {
    throw new ApiError(0, t('error.network'));
  }
  const text = response.status === 204 ? '' : await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const message = (data && data.msg) || t('error.http', { status: response.status });
    if (response.status === 401 && !(path === '/session' && method === 'POST')) unauthorized();
    throw new ApiError(response.status, message);
  }
  return data;
}

export const get = (path, query) => api('GET', path, { query });
export const post = (path, body, query) => api('POST', path, { body, query });
export const put = (path, body) => api('PUT', path, { body });
export const del = (path) => api('DELETE', path);

/** Every item of a list endpoint (the API's maximum page is 500; the UI's lists are small). */
export async function all(path, query = {}) {
  const page = await get(path, { ...query, offset: 0, limit: 500 });
  return page.items;
}
