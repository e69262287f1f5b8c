// What the user-facing commerce pages share: the payment channels users
// may choose, the answer of a pay call (a QR code drawn in the page for
// the wallet channels, the bank's instructions), order amounts and states.
import { html } from '../html.js';
import { t } from '../i18n.js';
import { dateTime } from '../format.js';
import { encode } from '../../vendor/uqr.mjs';

// userMethods are the channels self-service may use (docs/api.md
// POST /api/topup/order); the enabled ones come from /api/payment/status.
const userMethods = ['mobile_a', 'mobile_b', 'bank'];

// yuan shows an order amount, which the API answers in CNY (not quota).
export const yuan = (v) => '¥' + Number(v || 0).toFixed(2);

// chosenMethod is the channel a payment uses: the one picked when it is
// usable, else the first usable one. Pages derive it on every render rather
// than fixing a default when they mount: a checkout opened before
// /api/payment/status answered would otherwise keep "" after the channels
// arrive, while the select shows the first one.
export function chosenMethod(channels, picked) {
  const usable = channels.filter((c) => userMethods.includes(c));
  return usable.includes(picked) ? picked : usable[0] || '';
}

// MethodSelect picks one of the enabled channels; value is shown through
// chosenMethod, so the select never shows a channel the page will not send.
export function MethodSelect({ id, channels, value, onChange }) {
  const usable = channels.filter((c) => userMethods.includes(c));
  value = chosenMethod(channels, value);
  return html`<div class="field">
    <label for=${id}>${t('pay.method')}</label>
    <select id=${id} value=${value} onChange=${(e) => onChange(e.currentTarget.value)}>
      ${usable.map((c) => html`<option value=${c}>${t('pay.' + c)}</option>`)}
    </select>
    ${usable.length === 0 && html`<small>${t('pay.noChannel')}</small>`}
  </div>`;
}

// QR draws text as a QR code in SVG (one path, so it scales crisply and
// needs no image or canvas; the text never leaves the page).
export function QR({ text }) {
  let qr;
  try {
    qr = encode(text, { ecc: 'M', border: 2 });
  } catch {
    return null;
  }
  let d = '';
  qr.data.forEach((row, y) => row.forEach((on, x) => { if (on) d += `M${x} ${y}h1v1h-1z`; }));
  return html`<svg class="qr" role="img" aria-label=${t('pay.qrLabel')} viewBox=${`0 0 ${qr.size} ${qr.size}`}
    shape-rendering="crispEdges"><rect width="100%" height="100%" fill="#fff" /><path d=${d} fill="#000" /></svg>`;
}

// PayResult shows what a pay call answered: a warning when the channel
// could not start the payment, else the QR code and link, or the bank's
// instructions.
export function PayResult({ pay }) {
  if (!pay) return null;
  return html`<div class="card pay" id="pay-result" role="status">
    ${pay.status === 'warning'
      ? html`<p class="alert error">${t('pay.warning')} ${pay.warning}</p>`
      : html`<p>${t('pay.ready')}</p>`}
    ${pay.qr_code && html`<div class="qr-box"><${QR} text=${pay.qr_code} />
      <p class="muted">${t('pay.scan')}</p></div>`}
    ${pay.pay_url && html`<p><a href=${pay.pay_url} target="_blank" rel="noopener noreferrer">${t('pay.openLink')}</a></p>`}
    ${pay.note && html`<div><h2>${t('pay.bankTitle')}</h2><pre class="note">${pay.note}</pre></div>`}
    ${pay.expire_at > 0 && html`<p class="muted">${t('pay.expires', { time: dateTime(pay.expire_at) })}</p>`}
  </div>`;
}

// orderStatus is the label of an order's status (0 pending, 1 paid, 2
// cancelled, 3 refunded).
export const orderStatus = (s) => t('order.status' + s);
