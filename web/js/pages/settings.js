// Top-up and payment channel settings (root): GET/PUT /api/setting/topup,
// GET /api/setting/payment and PUT /api/setting/payment/{method}. Secrets
// come back from the server as "******" and are shown so; sending the mask
// back keeps the stored secret (docs/api.md Payment channels).
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { get, put } from '../api.js';
import { t } from '../i18n.js';
import { Alert, Field, notify } from '../ui.js';
import { TextArea, runner } from './adminui.js';

// The config fields of each channel, in form order. pem: a key the root
// may load from a .pem file (read in the browser, never sent elsewhere);
// multi: a textarea; file: a PEM file uploaded through the API's multipart
// form (the stored path is the server's, shown read-only).
const FIELDS = {
  mobile_a: [['app_id'], ['mch_id'], ['api_key', 'secret'], ['notify_url'], ['gateway'], ['cert_file', 'file'], ['key_file', 'file']],
  mobile_b: [['app_id'], ['private_key', 'pem'], ['public_key', 'pem'], ['gateway'], ['notify_url'],
    ['private_key_file', 'file'], ['public_key_file', 'file']],
  bank: [['account_name'], ['account_no'], ['bank_name'], ['branch'], ['notes', 'multi']],
};

export function Settings() {
  const [error, setError] = useState('');
  const [channels, setChannels] = useState([]);
  const run = runner(setError);
  const load = () => run(async () => setChannels((await get('/api/setting/payment')).data || []));
  useEffect(() => { load(); }, []);
  return html`<section>
    <h1>${t('nav.settings')}</h1>
    <${TopupSettings} />
    <h2>${t('settings.payment')}</h2>
    <${Alert} error=${error} />
    ${channels.map((c) => html`<${ChannelForm} key=${c.method} channel=${c} onSaved=${load} />`)}
  </section>`;
}

// QUOTA_PER_CNY is quota per CNY of balance (the settings answer's
// quota_per_unit).
const QUOTA_PER_CNY = 1000000;

// presetWarnings are the console's own checks of the form as typed (the
// API answers the same as warnings once saved): a preset crediting 0, or
// less than amount × rate; a rate of 1.
export function presetWarnings(f) {
  const rate = Number(f.exchange_rate);
  const out = [];
  if (rate === 1) out.push(t('settings.warnRateOne'));
  f.presets.forEach((p, i) => {
    const amount = Number(p.amount);
    const bonus = Number(p.bonus_quota || 0);
    if (!(amount > 0)) return;
    const due = Math.round(Math.round(amount * 100) * rate / 100);
    if (bonus === 0) out.push(t('settings.warnPresetZero', { n: i + 1, price: amount.toFixed(2) }));
    else if (bonus < due) out.push(t('settings.warnPresetBelow', { n: i + 1, price: amount.toFixed(2), credit: (bonus / QUOTA_PER_CNY).toFixed(2) }));
  });
  return out;
}

function TopupSettings() {
  const [f, setF] = useState(null);
  const [error, setError] = useState('');
  const [saved, setSaved] = useState('');
  const [notice, setNotice] = useState(''); // the save's message when it warns
  const run = runner(setError);
  const load = () => run(async () => {
    const d = (await get('/api/setting/topup')).data;
    setF({ enabled: d.enabled, allow_custom: d.allow_custom, exchange_rate: String(d.exchange_rate),
      presets: (d.presets || []).map((p) => ({ amount: String(p.amount), bonus_quota: String(p.bonus_quota) })) });
  });
  useEffect(() => { load(); }, []);
  if (!f) return html`<${Alert} error=${error} />`;
  const set = (k) => (v) => setF({ ...f, [k]: v });
  const setPreset = (i, k) => (v) => setF({ ...f, presets: f.presets.map((p, j) => (j === i ? { ...p, [k]: v } : p)) });
  const submit = (e) => {
    e.preventDefault();
    setSaved('');
    setNotice('');
    run(async () => {
      const env = await put('/api/setting/topup', {
        enabled: f.enabled, allow_custom: f.allow_custom, exchange_rate: Number(f.exchange_rate),
        presets: f.presets.map((p) => ({ amount: Number(p.amount), bonus_quota: Number(p.bonus_quota || 0) })),
      });
      // A save that warns (a low rate) is not a plain success.
      const warns = (env.data?.warnings || []).length > 0 || Number(f.exchange_rate) < QUOTA_PER_CNY / 100;
      setSaved(warns ? '' : env.message || t('settings.saved'));
      setNotice(warns ? env.message || t('settings.saved') : '');
      notify(t('saved.topup'), warns ? 'warn' : 'ok');
      await load();
    });
  };
  return html`<form class="card" id="topup-settings" onSubmit=${submit} aria-labelledby="topup-settings-title">
    <h2 id="topup-settings-title">${t('settings.topup')}</h2>
    <${Alert} error=${error} />
    <${Alert} error=${saved} kind="ok" />
    <${Alert} error=${notice} kind="warn" />
    <ul class="alert warn" id="topup-warnings" role="status" hidden=${presetWarnings(f).length === 0}>
      ${presetWarnings(f).map((w) => html`<li>${w}</li>`)}
    </ul>
    <${Field} type="checkbox" label=${t('settings.topupEnabled')} name="enabled" value=${f.enabled} onInput=${set('enabled')} />
    <${Field} type="checkbox" label=${t('settings.allowCustom')} name="allow_custom" value=${f.allow_custom} onInput=${set('allow_custom')} />
    <${Field} type="number" min="1" step="1" label=${t('settings.exchangeRate')} hint=${t('settings.exchangeRateHint')}
      name="exchange_rate" value=${f.exchange_rate} onInput=${set('exchange_rate')} />
    <fieldset>
      <legend>${t('settings.presets')}</legend>
      ${f.presets.map((p, i) => html`<div class="preset-row" key=${i} data-preset=${i}>
        <${Field} type="number" min="0" step="0.01" label=${t('settings.presetAmount', { n: i + 1 })} name="amount" value=${p.amount} onInput=${setPreset(i, 'amount')} />
        <${Field} type="number" min="0" step="1" label=${t('settings.presetBonus', { n: i + 1 })} name="bonus_quota" value=${p.bonus_quota} onInput=${setPreset(i, 'bonus_quota')} />
        <span class="preset-credit" data-credit=${i}>${t('settings.presetCredit', { credit: (Number(p.bonus_quota || 0) / QUOTA_PER_CNY).toFixed(2), price: Number(p.amount || 0).toFixed(2) })}</span>
        <button type="button" class="preset-fill" onClick=${() => setPreset(i, 'bonus_quota')(String(Math.round(Math.round(Number(p.amount || 0) * 100) * Number(f.exchange_rate || 0) / 100)))}>
          ${t('settings.presetFill', { n: i + 1 })}</button>        <button type="button" class="danger" onClick=${() => setF({ ...f, presets: f.presets.filter((_, j) => j !== i) })}>
          ${t('settings.presetRemove', { n: i + 1 })}</button>
      </div>`)}
      <button type="button" id="preset-add" onClick=${() => setF({ ...f, presets: [...f.presets, { amount: '', bonus_quota: '0' }] })}>
        ${t('settings.presetAdd')}</button>
    </fieldset>
    <button class="primary" type="submit">${t('action.save')}</button>
  </form>`;
}

// readPEM reads a chosen file as text in the browser.
const readPEM = (file) => new Promise((resolve, reject) => {
  const r = new FileReader();
  r.onload = () => resolve(String(r.result));
  r.onerror = () => reject(r.error);
  r.readAsText(file);
});

function ChannelForm({ channel, onSaved }) {
  const m = channel.method;
  const fields = FIELDS[m] || [];
  const initial = () => Object.fromEntries(fields.map(([k]) => [k, String(channel.config?.[k] ?? '')]));
  const [cfg, setCfg] = useState(initial);
  const [files, setFiles] = useState({}); // field → File chosen for upload
  const [enabled, setEnabled] = useState(Boolean(channel.enabled));
  const [error, setError] = useState('');
  const [saved, setSaved] = useState('');
  useEffect(() => { setCfg(initial()); setEnabled(Boolean(channel.enabled)); }, [channel]);
  const [formKey, setFormKey] = useState(0); // bumped to clear the file inputs after a save
  const run = runner(setError);
  const set = (k) => (v) => setCfg((c) => ({ ...c, [k]: v }));
  const load = (k) => (e) => {
    const file = e.currentTarget.files[0];
    if (file) run(async () => set(k)(await readPEM(file)));
  };
  const submit = (e) => {
    e.preventDefault();
    setSaved('');
    run(async () => {
      // Stored file paths are the server's: not sent back.
      const config = Object.fromEntries(fields.filter(([, kind]) => kind !== 'file').map(([k]) => [k, cfg[k]]));
      let body = { enabled, config };
      const chosen = Object.entries(files);
      if (chosen.length > 0) {
        // Files go as the API's multipart form: enabled, config as JSON
        // text, and each file under its config field's name.
        body = new FormData();
        body.set('enabled', String(enabled));
        body.set('config', JSON.stringify(config));
        for (const [k, file] of chosen) body.set(k, file, file.name);
      }
      const env = await put(`/api/setting/payment/${m}`, body);
      setSaved(env.message || t('settings.saved'));
      notify(t('saved.payment', { name: t('pay.' + m) }));
      setFiles({});
      setFormKey((n) => n + 1);
      onSaved();
    });
  };
  const label = (k) => t('settings.f_' + k);
  return html`<form class="card" id=${'pay-' + m} onSubmit=${submit} aria-labelledby=${'pay-title-' + m}>
    <h3 id=${'pay-title-' + m}>${t('pay.' + m)}</h3>
    <${Alert} error=${error} />
    <${Alert} error=${saved} kind="ok" />
    <${Field} type="checkbox" label=${t('settings.channelEnabled')} name="enabled" value=${enabled} onInput=${setEnabled} />
    ${fields.map(([k, kind]) => {
      if (kind === 'file') {
        const pick = (e) => {
          const file = e.currentTarget.files[0];
          setFiles((fs) => { const next = { ...fs }; if (file) next[k] = file; else delete next[k]; return next; });
        };
        return html`<div class="field" key=${k + formKey} data-file=${k}>
          <label for=${`file-${m}-${k}`}>${t('settings.uploadFile', { field: label(k) })}</label>
          <input id=${`file-${m}-${k}`} name=${k} type="file" accept=".pem,.key,.crt,application/x-pem-file" onChange=${pick} />
          <small>${t('settings.storedFile')}: <code class="stored-path">${cfg[k] || t('settings.noFile')}</code></small>
        </div>`;
      }
      if (kind === 'pem') {
        return html`<div key=${k}>
          <${TextArea} label=${label(k)} hint=${t('settings.pemHint')} name=${k} rows="4" value=${cfg[k]} onInput=${set(k)} spellcheck="false" />
          <div class="field">
            <label for=${`pem-${m}-${k}`}>${t('settings.pemFile', { field: label(k) })}</label>
            <input id=${`pem-${m}-${k}`} name=${k + '_upload'} type="file" accept=".pem,.key,.txt,application/x-pem-file" onChange=${load(k)} />
          </div>
        </div>`;
      }
      if (kind === 'multi') return html`<${TextArea} key=${k} label=${label(k)} name=${k} rows="3" value=${cfg[k]} onInput=${set(k)} />`;
      return html`<${Field} key=${k} label=${label(k)} name=${k} value=${cfg[k]} onInput=${set(k)}
        hint=${kind === 'secret' ? t('settings.secretHint') : ''} autocomplete="off" />`;
    })}
    <button class="primary" type="submit">${t('action.save')}</button>
  </form>`;
}
