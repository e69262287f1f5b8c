// Display helpers shared by the pages. Amounts are quota integers; the
// status endpoint says how many make one CNY (quota_per_unit). Numbers and
// dates are written in the console's chosen language, not the browser's.
import { lang } from './i18n.js';

// locale is the BCP 47 locale of the chosen language.
export const locale = () => (lang() === 'zh' ? 'zh-CN' : 'en-US');

export function money(quota, perUnit) {
  const v = (quota || 0) / (perUnit || 1000000);
  // Relay calls cost fractions of a fen: keep up to 6 decimals, trim zeros.
  return '¥' + Number(v.toFixed(6)).toLocaleString(locale(), { maximumFractionDigits: 6, minimumFractionDigits: 2 });
}

export const count = (n) => (n || 0).toLocaleString(locale());

// dateTime shows Unix seconds in the browser's zone, in the chosen
// language's format.
export function dateTime(sec) {
  if (!sec || sec < 0) return '';
  return new Date(sec * 1000).toLocaleString(locale());
}

// toLocalInput and fromLocalInput convert Unix seconds to and from the
// value of <input type="datetime-local">.
export function toLocalInput(sec) {
  if (!sec || sec < 0) return '';
  const d = new Date(sec * 1000);
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function fromLocalInput(v) {
  return v ? Math.floor(new Date(v).getTime() / 1000) : -1;
}
