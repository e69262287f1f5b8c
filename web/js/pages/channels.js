// Channels (admin): the server-paged list with search, create and edit
// (type, base URL, key, models, groups, model mapping, priority, weight),
// the test button (latency, or the upstream's error as the server words
// it), the last error and why the system disabled a channel (status 3),
// and this node's circuit breakers per model (GET /api/channel/breakers:
// state, last errors, next probe).
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { del, get, post, put } from '../api.js';
import { t } from '../i18n.js';
import { dateTime, money } from '../format.js';
import { Alert, Field, Pager, notify, rowClass, useFlash } from '../ui.js';
import { SearchBox, Select, TextArea, runner, usePaged } from './adminui.js';

const PAGE_SIZE = 20;
const TYPES = [1, 14, 24];

export function Channels({ session }) {
  const perUnit = session.status.quota_per_unit;
  const [error, setError] = useState('');
  const [editing, setEditing] = useState(null); // null, {} (new) or a channel
  const [tests, setTests] = useState({}); // id → {ok, text}
  const { page, setPage, list, load, search } = usePaged('/api/channel/', PAGE_SIZE, setError);
  const [breakers, setBreakers] = useState({ now: 0, byChannel: {} });
  const run = runner(setError);
  const [flashed, flash] = useFlash();
  // The breakers worth a look (open, probing, or with recent failures),
  // read again with every list load.
  useEffect(() => {
    get('/api/channel/breakers').then((env) => {
      const byChannel = {};
      for (const b of env.data.breakers) (byChannel[b.channel_id] ||= []).push(b);
      setBreakers({ now: env.data.now, byChannel });
    }).catch(() => {}); // the list itself reports errors
  }, [list]);

  const test = async (c) => {
    setTests({ ...tests, [c.id]: { text: t('channels.testing') } });
    let r;
    try {
      const env = await post(`/api/channel/test/${c.id}`);
      r = { ok: true, text: t('channels.testOK', { ms: env.data.time_ms, model: env.data.model }) };
    } catch (err) {
      r = { ok: false, text: err.message };
    }
    // The test recorded test_time, response_time and last_error: the row
    // is re-read first, so the answer shows beside what it wrote.
    await load();
    setTests((cur) => ({ ...cur, [c.id]: r }));
  };
  const toggle = (c) => run(async () => {
    await put('/api/channel/', { id: c.id, status: c.status === 1 ? 2 : 1 });
    await load();
    notify(t('saved.channel', { name: c.name }));
    flash(c.id);
  });
  const remove = (c) => confirm(t('channels.confirmDelete', { name: c.name })) &&
    run(async () => { await del(`/api/channel/${c.id}`); await load(); });

  return html`<section>
    <h1>${t('nav.channels')}</h1>
    <${Alert} error=${error} />
    ${editing
      ? html`<${ChannelForm} initial=${editing.id ? editing : null} onCancel=${() => setEditing(null)}
          onSaved=${(c) => { setEditing(null); load(); notify(t('saved.channel', { name: c.name })); flash(c.id); }} />`
      : html`<button class="primary" type="button" id="channel-new" onClick=${() => setEditing({})}>${t('channels.create')}</button>`}
    <${SearchBox} onSearch=${search} />
    <div class="table-scroll"><table id="channels">
      <caption class="sr-only">${t('nav.channels')}</caption>
      <thead><tr>
        <th>ID</th><th>${t('keys.name')}</th><th>${t('channels.type')}</th><th>${t('keys.status')}</th>
        <th>${t('channels.models')}</th><th>${t('channels.priority')}</th><th>${t('channels.tested')}</th>
        <th>${t('keys.used')}</th><th>${t('keys.actions')}</th>
      </tr></thead>
      <tbody>
        ${list.items.length === 0 && html`<tr><td colspan="9">${t('list.empty')}</td></tr>`}
        ${list.items.map((c) => html`<tr key=${c.id} data-channel=${c.name} class=${rowClass(flashed, c.id)}>
          <td>${c.id}</td><td>${c.name}<br /><small class="muted">${c.base_url}</small></td>
          <td>${t('channels.type' + c.type)}</td>
          <td><span class=${'badge s' + c.status}>${t('channels.status' + c.status)}</span>
            ${c.last_error && html`<details class="last-error"><summary>${c.status === 3 ? t('channels.autoDisabledWhy') : t('channels.lastError')}</summary><code>${c.last_error}</code></details>`}
            ${breakers.byChannel[c.id] && html`<${Breakers} list=${breakers.byChannel[c.id]} />`}</td>
          <td><code>${c.models}</code>${c.group !== 'default' && html`<br /><small class="muted">${t('channels.group')}: ${c.group}</small>`}</td>
          <td>${c.priority} / ${c.weight}</td>
          <td>${c.test_time ? html`${dateTime(c.test_time)}<br /><small class="muted">${c.response_time} ms</small>` : '—'}</td>
          <td>${money(c.used_quota, perUnit)}</td>
          <td class="actions">
            <button type="button" class="test" onClick=${() => test(c)}>${t('channels.test')}</button>
            <button type="button" onClick=${() => toggle(c)}>${c.status === 1 ? t('action.disable') : t('action.enable')}</button>
            <button type="button" onClick=${() => setEditing(c)}>${t('action.edit')}</button>
            <button type="button" class="danger" onClick=${() => remove(c)}>${t('action.delete')}</button>
            ${tests[c.id] && html`<p class=${'test-result ' + (tests[c.id].ok ? 'ok' : tests[c.id].ok === false ? 'error' : '')} role="status">${tests[c.id].text}</p>`}
          </td>
        </tr>`)}
      </tbody>
    </table></div>
    <${Pager} page=${page} pageSize=${PAGE_SIZE} total=${list.total} onPage=${setPage} />
  </section>`;
}

// Breakers shows a channel's circuit breakers that are not plainly
// healthy: per model, the state, when the next probe is due and the last
// failures. They are the answering node's (breakers live in each node's
// memory).
function Breakers({ list }) {
  const tripped = list.filter((b) => b.state !== 'closed').length;
  return html`<details class="breakers" open=${tripped > 0}>
    <summary>${tripped > 0 ? t('breakers.tripped', { n: tripped }) : t('breakers.errors')}</summary>
    <p class="muted"><small>${t('breakers.perNode')}</small></p>
    <ul>${list.map((b) => html`<li key=${b.model} data-breaker=${b.model}>
      <code>${b.model}</code> <span class=${'badge breaker-' + b.state}>${t('breakers.state_' + b.state)}</span>
      ${b.state === 'open' && html` <small>${t('breakers.probeAt', { time: dateTime(b.probe_at) })}</small>`}
      ${b.state === 'closed' && html` <small class="muted">${t('breakers.window', { failures: b.window_failures, calls: b.window_calls })}</small>`}
      <ul class="breaker-errors">${b.last_errors.map((e, i) => html`<li key=${i}>
        <small>${dateTime(e.time)} · ${e.status ? e.status : t('breakers.noAnswer')}${e.probe ? ' · ' + t('breakers.probe') : ''}</small>
        <code>${e.message}</code></li>`)}</ul>
    </li>`)}</ul>
  </details>`;
}

// ChannelForm creates or edits a channel. The key is write-only: editing
// with the key field empty keeps the stored one.
function ChannelForm({ initial, onSaved, onCancel }) {
  const editing = Boolean(initial);
  const [f, setF] = useState({
    type: String(initial?.type ?? 1), name: initial?.name ?? '', key: '', base_url: initial?.base_url ?? '',
    models: initial?.models ?? '', group: initial?.group ?? 'default', model_mapping: initial?.model_mapping ?? '',
    priority: String(initial?.priority ?? 0), weight: String(initial?.weight ?? 1),
  });
  const [error, setError] = useState('');
  const set = (k) => (v) => setF({ ...f, [k]: v });
  const submit = async (e) => {
    e.preventDefault();
    setError('');
    const body = { ...f, type: Number(f.type), priority: Number(f.priority), weight: Number(f.weight) };
    if (editing && !body.key) delete body.key;
    try {
      const env = editing ? await put('/api/channel/', { id: initial.id, ...body }) : await post('/api/channel/', body);
      onSaved({ id: env.data?.id ?? initial?.id, name: env.data?.name ?? f.name });
    } catch (err) {
      setError(err.message);
    }
  };
  return html`<form class="card" id="channel-form" onSubmit=${submit} aria-labelledby="channelform-title">
    <h2 id="channelform-title">${editing ? t('channels.edit') : t('channels.create')}</h2>
    <${Alert} error=${error} />
    <${Select} label=${t('channels.type')} name="type" value=${f.type} onInput=${set('type')}
      options=${TYPES.map((v) => [String(v), t('channels.type' + v)])} />
    <${Field} label=${t('keys.name')} name="name" value=${f.name} onInput=${set('name')} maxlength="128" required />
    <${Field} label=${t('channels.baseURL')} hint=${t('channels.baseURLHint')} name="base_url" value=${f.base_url} onInput=${set('base_url')} />
    <${Field} label=${t('channels.key')} hint=${editing ? t('channels.keyKeep') : t('channels.keyHint')} name="key"
      type="password" autocomplete="off" value=${f.key} onInput=${set('key')} />
    <${Field} label=${t('channels.models')} hint=${t('channels.modelsHint')} name="models" value=${f.models} onInput=${set('models')} required />
    <${Field} label=${t('channels.group')} hint=${t('channels.groupHint')} name="group" value=${f.group} onInput=${set('group')} />
    <${TextArea} label=${t('channels.mapping')} hint=${t('channels.mappingHint')} name="model_mapping" rows="3"
      value=${f.model_mapping} onInput=${set('model_mapping')} />
    <${Field} label=${t('channels.priority')} hint=${t('channels.priorityHint')} type="number" step="1" name="priority" value=${f.priority} onInput=${set('priority')} />
    <${Field} label=${t('channels.weight')} type="number" min="0" step="1" name="weight" value=${f.weight} onInput=${set('weight')} />
    <div class="actions">
      <button class="primary" type="submit">${t('action.save')}</button>
      <button type="button" onClick=${onCancel}>${t('action.cancel')}</button>
    </div>
  </form>`;
}
