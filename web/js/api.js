// The /api client. The session is the HttpOnly cookie the server sets on
// login; this module never sees or stores a password beyond the one login
// request. Every answer is the envelope {success, message, data, total}.
// Every request names the console's chosen language in Accept-Language, so
// the server writes its messages, log details and bank instructions in it
// (not in the browser's language, nor the site's default).
import { lang } from './i18n.js';

// ApiError carries the server's message as it came (already in the
// server's language) and the HTTP status.
export class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.status = status;
  }
}

// call sends one request and resolves to the envelope, or rejects with an
// ApiError when success is false or the answer is not the envelope.
export async function call(method, path, body) {
  const init = { method, credentials: 'same-origin', headers: { 'Accept-Language': lang() } };
  if (body instanceof FormData) {
    // A multipart upload: the browser writes the Content-Type with its boundary.
    init.body = body;
  } else if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new ApiError(String(e.message || e), 0);
  }
  let env;
  try {
    env = await res.json();
  } catch {
    throw new ApiError(`HTTP ${res.status}`, res.status);
  }
  if (!env || !env.success) {
    throw new ApiError((env && env.message) || `HTTP ${res.status}`, res.status);
  }
  return env;
}

export const get = (path) => call('GET', path);
export const post = (path, body) => call('POST', path, body ?? {});
export const put = (path, body) => call('PUT', path, body ?? {});
export const del = (path) => call('DELETE', path);

// query builds "?a=1&b=2" from an object, leaving out empty values.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}
