// sdk.mjs makes calls to the gateway with the official SDKs (npm `openai`
// and `@anthropic-ai/sdk`, pinned in package-lock.json) and prints one JSON
// line per call: what the SDK returned, or what it exposes of an error. The
// Go test in this directory (sdk_test.go) runs it and asserts on the lines.
//
// One call:
//   MODELGATE_BASE_URL=http://127.0.0.1:3000 MODELGATE_KEY=sk-... \
//     node sdk.mjs openai.chat --model gpt-4o-mini --max-retries 0
// Many calls in one process (what the Go test does): a JSON array of
// {name, op, key, model, maxRetries} on stdin:
//   node sdk.mjs --batch < calls.json
//
// Every client gets maxRetries explicitly and a counting fetch, so retries
// show as attempts > 1.
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const PROMPT = [{ role: 'user', content: 'Say hello.' }];

// ops are the SDK calls a scenario can make, by name.
const ops = {
  async 'openai.chat'(c) {
    const r = await c.openai().chat.completions.create({ model: c.model, messages: PROMPT });
    return { content: r.choices[0]?.message?.content ?? null, usage: r.usage ?? null, model: r.model };
  },
  async 'openai.chat.stream'(c) {
    const stream = await c.openai().chat.completions.create({
      model: c.model, messages: PROMPT, stream: true, stream_options: { include_usage: true },
    });
    let content = '', usage = null, chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      content += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    return { content, usage, chunks };
  },
  async 'openai.embeddings'(c) {
    const r = await c.openai().embeddings.create({ model: c.model, input: 'hello' });
    return { dims: r.data[0]?.embedding?.length ?? 0, inputs: r.data.length, usage: r.usage ?? null };
  },
  async 'openai.models'(c) {
    const ids = [];
    for await (const m of c.openai().models.list()) ids.push(m.id);
    return { models: ids.sort() };
  },
  async 'anthropic.messages'(c) {
    const r = await c.anthropic().messages.create({ model: c.model, max_tokens: 64, messages: PROMPT });
    return { content: text(r.content), usage: r.usage ?? null, model: r.model, stop_reason: r.stop_reason };
  },
  async 'anthropic.messages.stream'(c) {
    const stream = c.anthropic().messages.stream({ model: c.model, max_tokens: 64, messages: PROMPT });
    let chunks = 0;
    stream.on('text', () => chunks++);
    const r = await stream.finalMessage();
    return { content: text(r.content), usage: r.usage ?? null, chunks, stop_reason: r.stop_reason };
  },
  async 'anthropic.count_tokens'(c) {
    const r = await c.anthropic().messages.countTokens({ model: c.model, messages: PROMPT });
    return { count: r };
  },
  // The Message Batches API lives under /v1/messages/batches, which the
  // gateway does not offer: an unknown path under /v1/messages.
  async 'anthropic.batches'(c) {
    const r = await c.anthropic().messages.batches.create({
      requests: [{ custom_id: 'one', params: { model: c.model, max_tokens: 16, messages: PROMPT } }],
    });
    return { id: r.id };
  },
};

function text(blocks) {
  return (blocks ?? []).filter((b) => b.type === 'text').map((b) => b.text).join('');
}

// run makes one call and describes its outcome.
async function run(call, baseURL) {
  const seen = { attempts: 0, requests: [], shouldRetry: null };
  // The SDKs call fetch once per attempt, retries included.
  const fetch = async (url, init) => {
    seen.attempts++;
    seen.requests.push(`${init?.method ?? 'GET'} ${new URL(url).pathname}`);
    const res = await globalThis.fetch(url, init);
    seen.shouldRetry = res.headers.get('x-should-retry');
    return res;
  };
  const common = { apiKey: call.key, maxRetries: call.maxRetries, timeout: 20_000, fetch };
  const c = {
    model: call.model,
    // Explicit nulls: the SDKs would otherwise take a bearer token,
    // organization or project from ANTHROPIC_*/OPENAI_* variables.
    openai: () => new OpenAI({ ...common, baseURL: `${baseURL}/v1`, organization: null, project: null }),
    anthropic: () => new Anthropic({ ...common, baseURL, authToken: null }),
  };
  const out = { name: call.name ?? call.op, op: call.op };
  const op = ops[call.op];
  const start = Date.now();
  try {
    if (!op) throw new Error(`unknown op ${call.op}; known: ${Object.keys(ops).join(', ')}`);
    Object.assign(out, { ok: true }, await op(c));
  } catch (err) {
    Object.assign(out, {
      ok: false,
      class: err?.constructor?.name ?? typeof err,
      status: err?.status ?? null,
      code: err?.code ?? null,
      type: err?.type ?? null,
      error: err?.error ?? null, // openai: the body's "error"; anthropic: the whole body
      message: String(err?.message ?? err),
    });
  }
  return Object.assign(out, seen, { ms: Date.now() - start });
}

async function main(argv) {
  const baseURL = (process.env.MODELGATE_BASE_URL ?? 'http://127.0.0.1:3000').replace(/\/+$/, '');
  let calls;
  if (argv[0] === '--batch') {
    calls = JSON.parse(await readStdin());
  } else if (argv[0] && !argv[0].startsWith('-')) {
    const flags = parseFlags(argv.slice(1));
    calls = [{
      op: argv[0],
      key: flags.key ?? process.env.MODELGATE_KEY ?? '',
      model: flags.model ?? process.env.MODELGATE_MODEL ?? '',
      maxRetries: Number(flags['max-retries'] ?? 0),
    }];
  } else {
    console.error(`usage: node sdk.mjs <op> [--model M] [--key K] [--max-retries N]\n       node sdk.mjs --batch < calls.json\nops: ${Object.keys(ops).join(', ')}`);
    process.exit(2);
  }
  for (const call of calls) {
    process.stdout.write(JSON.stringify(await run(call, baseURL)) + '\n');
  }
}

function parseFlags(args) {
  const flags = {};
  for (let i = 0; i + 1 < args.length; i += 2) flags[args[i].replace(/^--/, '')] = args[i + 1];
  return flags;
}

async function readStdin() {
  const parts = [];
  for await (const part of process.stdin) parts.push(part);
  return Buffer.concat(parts).toString('utf8');
}

await main(process.argv.slice(2));
