// Every user's orders (admin; delete is root's: docs/api.md Orders):
// filters and paging on the server, mark a pending order paid with the
// method and the trade number (PUT /api/order/{id} status 1, which
// activates it exactly once), refund (status 3), delete.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { del, get, put, query } from '../api.js';
import { t } from '../i18n.js';
import { dateTime } from '../format.js';
import { Alert, Field, Pager, notify, rowClass, useFlash } from '../ui.js';
import { queryParam } from '../router.js';
import { Select, runner } from './adminui.js';
import { orderStatus, yuan } from './pay.js';

const PAGE_SIZE = 20;
const ROOT = 100;
const methods = ['bank', 'offline', 'mobile_a', 'mobile_b', 'free'];

export function AdminOrders({ session }) {
  const [error, setError] = useState('');
  const [filter, setFilter] = useState(() => ({ type: '', status: '', user_id: queryParam('user_id'), keyword: '' }));
  const [applied, setApplied] = useState(filter);
  const [page, setPage] = useState(0);
  const [list, setList] = useState({ items: [], total: 0 });
  const [marking, setMarking] = useState(null); // the order being marked paid
  const run = runner(setError);
  const [flashed, flash] = useFlash();
  const load = () => run(async () => {
    const env = await get('/api/order/' + query({ p: page, page_size: PAGE_SIZE, ...applied }));
    setList({ items: env.data || [], total: env.total || 0 });
  });
  useEffect(() => { load(); }, [page, applied]);
  const setF = (k) => (v) => setFilter({ ...filter, [k]: v });
  const apply = (e) => { e.preventDefault(); setPage(0); setApplied({ ...filter, keyword: filter.keyword.trim() }); };
  const refund = (o) => confirm(t('aorders.confirmRefund', { no: o.order_no })) &&
    run(async () => { await put(`/api/order/${o.id}`, { status: 3 }); await load(); });
  const remove = (o) => confirm(t('aorders.confirmDelete', { no: o.order_no })) &&
    run(async () => { await del(`/api/order/${o.id}`); await load(); });
  const root = session.user.role >= ROOT;

  return html`<section>
    <h1>${t('nav.adminOrders')}</h1>
    <${Alert} error=${error} />
    <form class="filters" id="order-filters" onSubmit=${apply} aria-label=${t('aorders.filters')}>
      <${Select} label=${t('orders.type')} name="type" value=${filter.type} onInput=${setF('type')}
        options=${[['', t('orders.typeAll')], ['1', t('orders.type1')], ['2', t('orders.type2')]]} />
      <${Select} label=${t('orders.status')} name="status" value=${filter.status} onInput=${setF('status')}
        options=${[['', t('orders.typeAll')], ...[0, 1, 2, 3].map((s) => [String(s), orderStatus(s)])]} />
      <${Field} label=${t('aorders.userID')} type="number" min="1" step="1" name="user_id" value=${filter.user_id} onInput=${setF('user_id')} />
      <${Field} label=${t('aorders.keyword')} name="keyword" value=${filter.keyword} onInput=${setF('keyword')} maxlength="191" />
      <div class="actions"><button type="submit" class="primary">${t('logs.apply')}</button></div>
    </form>
    ${marking && html`<${MarkPaid} order=${marking} onCancel=${() => setMarking(null)} onDone=${() => { const o = marking; setMarking(null); load(); notify(t('saved.order', { no: o.order_no })); flash(o.id); }} />`}
    <div class="table-scroll"><table id="admin-orders">
      <caption class="sr-only">${t('nav.adminOrders')}</caption>
      <thead><tr>
        <th>${t('plans.orderNo')}</th><th>${t('aorders.userID')}</th><th>${t('orders.type')}</th><th>${t('plans.amount')}</th>
        <th>${t('orders.status')}</th><th>${t('pay.method')}</th><th>${t('aorders.tradeNo')}</th>
        <th>${t('orders.created')}</th><th>${t('aorders.paidAt')}</th><th>${t('keys.actions')}</th>
      </tr></thead>
      <tbody>
        ${list.items.length === 0 && html`<tr><td colspan="10">${t('list.empty')}</td></tr>`}
        ${list.items.map((o) => html`<tr key=${o.id} data-order=${o.order_no} class=${rowClass(flashed, o.id)}>
          <td><code>${o.order_no}</code></td><td>${o.user_id}</td>
          <td>${t('orders.type' + o.type)}</td><td>${yuan(o.amount)}</td>
          <td><span class=${'badge o' + o.status}>${orderStatus(o.status)}</span></td>
          <td>${o.pay_method ? t('pay.' + o.pay_method) : ''}</td><td>${o.pay_trade_no}</td>
          <td>${dateTime(o.create_time)}</td><td>${dateTime(o.pay_time)}</td>
          <td class="actions">
            ${o.status === 0 && html`<button type="button" class="mark-paid" onClick=${() => { setError(''); setMarking(o); }}>${t('aorders.markPaid')}</button>`}
            ${o.status !== 3 && html`<button type="button" class="refund" onClick=${() => refund(o)}>${t('aorders.refund')}</button>`}
            ${root && html`<button type="button" class="danger" onClick=${() => remove(o)}>${t('action.delete')}</button>`}
          </td>
        </tr>`)}
      </tbody>
    </table></div>
    <${Pager} page=${page} pageSize=${PAGE_SIZE} total=${list.total} onPage=${setPage} />
  </section>`;
}

// MarkPaid records a payment received outside the providers' callbacks
// (a bank transfer seen on the statement, say).
function MarkPaid({ order, onDone, onCancel }) {
  const [method, setMethod] = useState(methods.includes(order.pay_method) ? order.pay_method : 'bank');
  const [tradeNo, setTradeNo] = useState('');
  const [error, setError] = useState('');
  const submit = async (e) => {
    e.preventDefault();
    setError('');
    try {
      await put(`/api/order/${order.id}`, { status: 1, pay_method: method, pay_trade_no: tradeNo.trim() });
      onDone();
    } catch (err) {
      setError(err.message);
    }
  };
  return html`<form class="card narrow" id="mark-paid" onSubmit=${submit} aria-labelledby="markpaid-title">
    <h2 id="markpaid-title">${t('aorders.markPaidTitle', { no: order.order_no, amount: yuan(order.amount) })}</h2>
    <${Alert} error=${error} />
    <${Select} label=${t('pay.method')} name="pay_method" value=${method} onInput=${setMethod}
      options=${methods.map((m) => [m, t('pay.' + m)])} />
    <${Field} label=${t('aorders.tradeNo')} hint=${t('aorders.tradeNoHint')} name="pay_trade_no" value=${tradeNo} onInput=${setTradeNo} maxlength="128" />
    <div class="actions">
      <button class="primary" type="submit">${t('aorders.markPaid')}</button>
      <button type="button" onClick=${onCancel}>${t('action.cancel')}</button>
    </div>
  </form>`;
}
