// The listed plans (GET /api/plan/list) and buying one: the user picks
// stack or price_diff, the order is created without a channel so its
// amount (prorated for price_diff) shows before paying, then paid with an
// enabled channel (POST /api/order/self/{id}/pay) or cancelled.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { get, post } from '../api.js';
import { t } from '../i18n.js';
import { Alert } from '../ui.js';
import { Link } from '../router.js';
import { MethodSelect, PayResult, chosenMethod, orderStatus, yuan } from './pay.js';

// limitModels lists the models a plan's model_limits names.
function limitModels(text) {
  try {
    return Object.keys(JSON.parse(text || '{}'));
  } catch {
    return [];
  }
}

// Checkout is the order of one plan from creation to payment.
function Checkout({ plan, channels, onClose }) {
  const [mode, setMode] = useState('stack');
  const [order, setOrder] = useState(null);
  const [picked, setMethod] = useState('');
  const method = chosenMethod(channels, picked);
  const [pay, setPay] = useState(null);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const run = async (f) => {
    setBusy(true);
    setError('');
    try {
      await f();
    } catch (err) {
      setError(err.message);
    } finally {
      setBusy(false);
    }
  };
  const create = (e) => {
    e.preventDefault();
    run(async () => setOrder((await post('/api/order/plan', { plan_id: plan.id, mode })).data));
  };
  const payNow = () => run(async () => {
    const env = await post(`/api/order/self/${order.id}/pay`, { pay_method: method });
    setOrder(env.data);
    setPay(env.data.pay);
  });
  const cancel = () => run(async () => { setOrder((await post(`/api/order/self/${order.id}/cancel`)).data); setPay(null); });

  return html`<div class="card checkout" id="checkout" role="region" aria-labelledby="checkout-title">
    <h2 id="checkout-title">${t('plans.buyTitle', { name: plan.name })}</h2>
    <${Alert} error=${error} />
    ${!order && html`<form onSubmit=${create}>
      <fieldset>
        <legend>${t('plans.mode')}</legend>
        ${['stack', 'price_diff'].map((m) => html`<div class="field check">
          <label for=${'mode-' + m}>${t('plans.mode.' + m)}</label>
          <input type="radio" id=${'mode-' + m} name="mode" value=${m} checked=${mode === m} onChange=${() => setMode(m)} />
        </div>`)}
        <small class="muted">${t('plans.modeHint')}</small>
      </fieldset>
      <div class="actions">
        <button class="primary" type="submit" disabled=${busy}>${t('plans.createOrder')}</button>
        <button type="button" onClick=${onClose}>${t('action.cancel')}</button>
      </div>
    </form>`}
    ${order && html`<div>
      <p id="order-amount">${t('plans.amount')} <strong>${yuan(order.amount)}</strong>
        ${order.mode === 'price_diff' && Number(order.amount) < Number(plan.price) ? html` <small class="muted">${t('plans.prorated', { price: yuan(plan.price) })}</small>` : ''}</p>
      <p class="muted">${t('plans.orderNo')} <code>${order.order_no}</code> · ${orderStatus(order.status)}</p>
      ${order.status === 0 && html`<${MethodSelect} id="plan-method" channels=${channels} value=${method} onChange=${setMethod} />
        <div class="actions">
          <button class="primary" type="button" id="pay" disabled=${busy || !method} onClick=${payNow}>${t('pay.payNow')}</button>
          <button type="button" class="danger" disabled=${busy} onClick=${cancel}>${t('orders.cancel')}</button>
        </div>`}
      <${PayResult} pay=${pay} />
      <p><${Link} href="/orders">${t('plans.seeOrders')}<//> · <button type="button" onClick=${onClose}>${t('action.close')}</button></p>
    </div>`}
  </div>`;
}

export function Plans() {
  const [plans, setPlans] = useState(null);
  const [channels, setChannels] = useState([]);
  const [error, setError] = useState('');
  const [buying, setBuying] = useState(null);
  useEffect(() => {
    get('/api/plan/list').then((env) => setPlans(env.data || []), (err) => setError(err.message));
    get('/api/payment/status').then((env) => setChannels(env.data.channels || []), (err) => setError(err.message));
  }, []);
  return html`<section>
    <h1>${t('nav.plans')}</h1>
    <${Alert} error=${error} />
    ${buying && html`<${Checkout} key=${buying.id} plan=${buying} channels=${channels} onClose=${() => setBuying(null)} />`}
    ${plans && plans.length === 0 && html`<p>${t('plans.none')}</p>`}
    <div class="plans">
      ${(plans || []).map((p) => html`<article class=${'card plan' + (p.recommended ? ' recommended' : '')} key=${p.id} id=${'plan-' + p.id}>
        <h2>${p.name} ${p.recommended && html`<span class="badge s1">${t('plans.recommended')}</span>`}</h2>
        <p class="price"><strong>${yuan(p.price)}</strong> / ${p.duration_text || t('plans.days', { n: p.duration_days })}</p>
        ${p.description && html`<p>${p.description}</p>`}
        ${p.features.length > 0 && html`<ul>${p.features.map((f) => html`<li>${f}</li>`)}</ul>`}
        ${limitModels(p.model_limits).length > 0 && html`<p class="muted">${t('plans.models')} ${limitModels(p.model_limits).join(', ')}</p>`}
        <button class="primary" type="button" onClick=${() => setBuying(p)}>${t('plans.buy')}</button>
      </article>`)}
    </div>
  </section>`;
}
