// Cluster nodes (root): the node table with status (or "awaiting its
// secret": a record a ping or discovery made, completed by PUT), last heartbeat and
// consecutive failures, a ping button (GET /api/cluster_node/ping/{id}),
// enable and disable (DELETE is the soft disable), and adding a node.
// With cluster mode off every route answers 集群模式未开启, shown as sent.
import { useState } from 'preact/hooks';
import { html } from '../html.js';
import { del, get, post } from '../api.js';
import { t } from '../i18n.js';
import { dateTime } from '../format.js';
import { Alert, Field, Pager, notify } from '../ui.js';
import { runner, usePaged } from './adminui.js';

const PAGE_SIZE = 20;

export function Nodes() {
  const [error, setError] = useState('');
  const [pings, setPings] = useState({}); // id → {ok, text}
  const [adding, setAdding] = useState(false);
  const { page, setPage, list, load } = usePaged('/api/cluster_node/', PAGE_SIZE, setError);
  const run = runner(setError);
  const ping = (n) => run(async () => {
    const env = await get(`/api/cluster_node/ping/${n.id}`);
    const d = env.data;
    // The table is re-read first, so the answer shows with the heartbeat
    // and failure count the ping just wrote, never beside the old ones.
    await load();
    setPings((cur) => ({ ...cur, [n.id]: d.ok
      ? { ok: true, text: t('nodes.pingOK', { ms: d.rtt_ms, learned: d.learned }) }
      : { ok: false, text: t('nodes.pingFailed', { error: d.error }) } }));
  });
  const setDisabled = (n, off) => run(async () => {
    if (off) await del(`/api/cluster_node/${n.id}`);
    else await post(`/api/cluster_node/${n.id}/enable`);
    await load();
  });

  return html`<section>
    <h1>${t('nav.nodes')}</h1>
    <${Alert} error=${error} />
    ${adding
      ? html`<${NodeForm} onCancel=${() => setAdding(false)} onSaved=${() => { setAdding(false); load(); notify(t('saved.node')); }} />`
      : html`<button class="primary" type="button" onClick=${() => setAdding(true)}>${t('nodes.add')}</button>`}
    <div class="table-scroll"><table id="nodes">
      <caption class="sr-only">${t('nav.nodes')}</caption>
      <thead><tr><th>${t('nodes.nodeID')}</th><th>${t('keys.name')}</th><th>${t('nodes.address')}</th><th>${t('keys.status')}</th>
        <th>${t('nodes.heartbeat')}</th><th>${t('nodes.failures')}</th><th>${t('keys.actions')}</th></tr></thead>
      <tbody>
        ${list.items.length === 0 && html`<tr><td colspan="7">${t('list.empty')}</td></tr>`}
        ${list.items.map((n) => html`<tr key=${n.id}>
          <td>${n.node_id}</td><td>${n.node_name}</td><td><code>${n.address}</code></td>
          <td>${n.state === 'awaiting_secret'
            ? html`<span class="badge s2">${t('nodes.awaitingSecret')}</span>`
            : html`<span class=${'badge s' + n.status}>${t('nodes.status' + n.status)}</span>`}
            ${n.disabled && html` <span class="badge s2">${t('keys.status2')}</span>`}</td>
          <td>${n.last_heartbeat ? dateTime(n.last_heartbeat) : t('nodes.never')}</td><td>${n.ping_failures}</td>
          <td class="actions">
            <button type="button" onClick=${() => ping(n)}>${t('nodes.ping')}</button>
            <button type="button" onClick=${() => setDisabled(n, !n.disabled)}>${n.disabled ? t('action.enable') : t('action.disable')}</button>
            ${pings[n.id] && html`<p class=${'test-result ' + (pings[n.id].ok ? 'ok' : 'error')} role="status">${pings[n.id].text}</p>`}
          </td></tr>`)}
      </tbody>
    </table></div>
    <${Pager} page=${page} pageSize=${PAGE_SIZE} total=${list.total} onPage=${setPage} />
  </section>`;
}

function NodeForm({ onSaved, onCancel }) {
  const [f, setF] = useState({ node_id: '', node_name: '', address: '', secret_key: '' });
  const [error, setError] = useState('');
  const set = (k) => (v) => setF({ ...f, [k]: v });
  const submit = async (e) => {
    e.preventDefault();
    setError('');
    try {
      await post('/api/cluster_node/', { ...f, node_id: Number(f.node_id) });
      onSaved();
    } catch (err) {
      setError(err.message);
    }
  };
  return html`<form class="card narrow" onSubmit=${submit} aria-labelledby="nodeform-title">
    <h2 id="nodeform-title">${t('nodes.add')}</h2>
    <${Alert} error=${error} />
    <${Field} label=${t('nodes.nodeID')} type="number" min="1" max="49" step="1" value=${f.node_id} onInput=${set('node_id')} required />
    <${Field} label=${t('keys.name')} maxlength="64" value=${f.node_name} onInput=${set('node_name')} required />
    <${Field} label=${t('nodes.address')} value=${f.address} onInput=${set('address')} required />
    <${Field} label=${t('nodes.secret')} type="password" autocomplete="off" value=${f.secret_key} onInput=${set('secret_key')} required />
    <div class="actions">
      <button class="primary" type="submit">${t('action.save')}</button>
      <button type="button" onClick=${onCancel}>${t('action.cancel')}</button>
    </div>
  </form>`;
}
