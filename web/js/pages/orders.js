// The user's orders (GET /api/order/self), paged on the server and
// filtered by type; a pending order can be paid again (with another
// channel if wished) or cancelled.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { get, post, query } from '../api.js';
import { t } from '../i18n.js';
import { dateTime } from '../format.js';
import { Alert, Pager } from '../ui.js';
import { MethodSelect, PayResult, chosenMethod, orderStatus, yuan } from './pay.js';

const PAGE_SIZE = 10;

export function Orders() {
  const [type, setType] = useState('');
  const [page, setPage] = useState(0);
  const [list, setList] = useState({ items: [], total: 0 });
  const [channels, setChannels] = useState([]);
  const [paying, setPaying] = useState(null); // {order, method, pay}
  const [error, setError] = useState('');
  const load = () => get('/api/order/self' + query({ p: page, page_size: PAGE_SIZE, type }))
    .then((env) => setList({ items: env.data || [], total: env.total || 0 }), (err) => setError(err.message));
  useEffect(() => { load(); }, [page, type]);
  useEffect(() => { get('/api/payment/status').then((env) => setChannels(env.data.channels || []), () => {}); }, []);

  const act = async (f) => {
    setError('');
    try {
      await f();
    } catch (err) {
      setError(err.message);
    }
    load();
  };
  const startPay = (o) => setPaying({ order: o, method: o.pay_method || '', pay: null });
  const payNow = () => act(async () => {
    const env = await post(`/api/order/self/${paying.order.id}/pay`, { pay_method: chosenMethod(channels, paying.method) });
    setPaying({ ...paying, pay: env.data.pay });
  });
  const cancel = (o) => act(async () => {
    await post(`/api/order/self/${o.id}/cancel`);
    if (paying && paying.order.id === o.id) setPaying(null);
  });

  return html`<section>
    <h1>${t('nav.orders')}</h1>
    <${Alert} error=${error} />
    <div class="field inline">
      <label for="order-type">${t('orders.type')}</label>
      <select id="order-type" value=${type} onChange=${(e) => { setPage(0); setType(e.currentTarget.value); }}>
        <option value="">${t('orders.typeAll')}</option>
        <option value="1">${t('orders.type1')}</option>
        <option value="2">${t('orders.type2')}</option>
      </select>
    </div>
    ${paying && html`<div class="card" id="repay" role="region" aria-labelledby="repay-title">
      <h2 id="repay-title">${t('orders.payTitle', { no: paying.order.order_no, amount: yuan(paying.order.amount) })}</h2>
      <${MethodSelect} id="repay-method" channels=${channels} value=${paying.method} onChange=${(m) => setPaying({ ...paying, method: m })} />
      <div class="actions">
        <button class="primary" type="button" disabled=${!chosenMethod(channels, paying.method)} onClick=${payNow}>${t('pay.payNow')}</button>
        <button type="button" onClick=${() => setPaying(null)}>${t('action.close')}</button>
      </div>
      <${PayResult} pay=${paying.pay} />
    </div>`}
    <div class="table-scroll"><table id="orders">
      <caption class="sr-only">${t('nav.orders')}</caption>
      <thead><tr>
        <th>${t('plans.orderNo')}</th><th>${t('orders.type')}</th><th>${t('orders.what')}</th><th>${t('plans.amount')}</th>
        <th>${t('orders.status')}</th><th>${t('pay.method')}</th><th>${t('orders.created')}</th><th>${t('keys.actions')}</th>
      </tr></thead>
      <tbody>
        ${list.items.length === 0 && html`<tr><td colspan="8">${t('list.empty')}</td></tr>`}
        ${list.items.map((o) => html`<tr key=${o.id}>
          <td><code>${o.order_no}</code></td>
          <td>${t('orders.type' + o.type)}</td>
          <td>${describe(o)}</td>
          <td>${yuan(o.amount)}</td>
          <td><span class=${'badge o' + o.status}>${orderStatus(o.status)}</span></td>
          <td>${o.pay_method ? t('pay.' + o.pay_method) : ''}</td>
          <td>${dateTime(o.create_time)}</td>
          <td>${o.status === 0 && html`<div class="actions">
            <button type="button" onClick=${() => startPay(o)}>${t('orders.payAgain')}</button>
            <button type="button" class="danger" onClick=${() => cancel(o)}>${t('orders.cancel')}</button></div>`}</td>
        </tr>`)}
      </tbody>
    </table></div>
    <${Pager} page=${page} pageSize=${PAGE_SIZE} total=${list.total} onPage=${setPage} />
  </section>`;
}

// describe names what an order buys: the plan (from plan_info, as bought).
function describe(o) {
  if (o.type !== 1) return '';
  try {
    return JSON.parse(o.plan_info || '{}').name || '';
  } catch {
    return '';
  }
}
