// The official `openai` npm package against an inferd node, for the
// tests/e2e/http_*.sh scripts. Each case prints JSON lines {"what",...}:
//
//   NODE_PATH=DIR/node_modules node openai_client.cjs BASE_URL MODEL PROMPT MAX_TOKENS [CASE]
//
// basic (the default, tests/e2e/http_api.sh): a streaming chat completion
// and a non-streaming completion, greedy. big: a completion whose prompt
// is the file PROMPT names (its status and error, or its text).
'use strict';
const fs = require('fs');
const OpenAI = require('openai');

// An API error as a line: what the tests compare.
function failed(what, e) {
    return { what, status: e.status || null, code: (e.error && e.error.code) || e.code || null,
             message: String(e.message || e) };
}

async function big(client, model, file, n) {
    const prompt = fs.readFileSync(file, 'utf8');
    try {
        const r = await client.completions.create({ model, prompt, max_tokens: n, temperature: 0 });
        console.log(JSON.stringify({ what: 'big', status: 200, text: r.choices[0].text,
                                     usage: r.usage }));
    } catch (e) {
        console.log(JSON.stringify(failed('big', e)));
    }
}

async function basic(client, model, prompt, n) {
    let chat = '', finish = null, chunks = 0;
    const stream = await client.chat.completions.create({
        model, messages: [{ role: 'user', content: prompt }], max_tokens: n, temperature: 0,
        seed: 7, stream: true,
    });
    for await (const chunk of stream) {
        chunks++;
        const choice = chunk.choices[0];
        if (choice.delta.content) chat += choice.delta.content;
        if (choice.finish_reason) finish = choice.finish_reason;
    }
    console.log(JSON.stringify({ what: 'chat_stream', text: chat, finish, chunks }));

    const done = await client.completions.create({ model, prompt, max_tokens: n, temperature: 0 });
    console.log(JSON.stringify({ what: 'completion', text: done.choices[0].text,
                                 finish: done.choices[0].finish_reason, usage: done.usage }));
}

// Sampling: greedy with n 3 and alone, streaming and not; a seeded
// sampled request twice; top_k 1 (llama.cpp's field, an extra body field
// here) sampling at temperature 1; logit_bias banning a token; penalties.
async function sampling(client, model, prompt, n) {
    const base = { model, prompt, max_tokens: n };
    const text = (r) => r.choices.map((c) => c.text);
    const solo = await client.completions.create({ ...base, temperature: 0 });
    const three = await client.completions.create({ ...base, temperature: 0, n: 3 });
    console.log(JSON.stringify({ what: 'greedy', solo: solo.choices[0].text, three: text(three),
                                 index: three.choices.map((c) => c.index), usage: three.usage }));
    const stream = await client.completions.create({ ...base, temperature: 0, n: 3, stream: true });
    const streamed = ['', '', ''];
    for await (const chunk of stream)
        for (const c of chunk.choices) streamed[c.index] += c.text;
    console.log(JSON.stringify({ what: 'greedy_stream', three: streamed }));
    const seeded = [];
    for (let i = 0; i < 2; i++)
        seeded.push((await client.completions.create({ ...base, temperature: 1, seed: 1234 }))
            .choices[0].text);
    const other = (await client.completions.create({ ...base, temperature: 1, seed: 99 }))
        .choices[0].text;
    console.log(JSON.stringify({ what: 'seeded', seeded, other }));
    const topk = await client.completions.create({ ...base, temperature: 1, top_k: 1 });
    console.log(JSON.stringify({ what: 'top_k', text: topk.choices[0].text }));
    const chat = await client.chat.completions.create({
        model, messages: [{ role: 'user', content: prompt }], max_tokens: n, temperature: 1,
        top_k: 1, min_p: 0.1, repeat_penalty: 1.0, seed: 5 });
    const chatGreedy = await client.chat.completions.create({
        model, messages: [{ role: 'user', content: prompt }], max_tokens: n, temperature: 0 });
    console.log(JSON.stringify({ what: 'chat_top_k', text: chat.choices[0].message.content,
                                 greedy: chatGreedy.choices[0].message.content }));
    const pen = await client.completions.create({ ...base, temperature: 0, frequency_penalty: 2,
                                                  presence_penalty: 2 });
    console.log(JSON.stringify({ what: 'penalised', text: pen.choices[0].text }));
}

// logit_bias: the token ids of a prompt of token ids, banned.
async function bias(client, model, prompt, n) {
    const ban = JSON.parse(prompt); // {"TOKEN": -100, ...}
    const r = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: n,
                                                temperature: 0, logit_bias: ban });
    console.log(JSON.stringify({ what: 'bias', text: r.choices[0].text }));
}

// models.retrieve of MODEL, and of a name the node does not serve.
async function retrieve(client, model) {
    const m = await client.models.retrieve(model);
    let missing;
    try {
        await client.models.retrieve('no-such-model');
    } catch (e) {
        missing = failed('missing', e);
    }
    console.log(JSON.stringify({ what: 'retrieve', model: m, missing }));
}

// logprobs (K = 5 alternatives): chat and completions, streaming and not,
// greedy and sampled, n 3. Each line holds the facts the script checks.
const K = 5;
// A chat entry's checks: K alternatives, sorted descending, every value
// <= 0, their probabilities summing to at most 1, the chosen token's no
// more probable than the first (equal to it when greedy).
function entryFacts(e, greedy) {
    const top = e.top_logprobs;
    let sorted = true;
    for (let i = 1; i < top.length; i++) if (top[i].logprob > top[i - 1].logprob) sorted = false;
    const mass = top.reduce((m, t) => m + Math.exp(t.logprob), 0);
    return { k: top.length === K, sorted, nonpos: e.logprob <= 0 && top.every((t) => t.logprob <= 0),
             mass: mass <= 1 + 1e-9,
             chosen: greedy ? e.logprob === top[0].logprob && e.token === top[0].token
                            : e.logprob <= top[0].logprob,
             bytes: Buffer.from(e.bytes).toString('utf8') === e.token };
}
function allFacts(entries, greedy) {
    const f = entries.map((e) => entryFacts(e, greedy));
    const every = (k) => f.length > 0 && f.every((x) => x[k]);
    return { n: f.length, k: every('k'), sorted: every('sorted'), nonpos: every('nonpos'),
             mass: every('mass'), chosen: every('chosen'), bytes: every('bytes') };
}
// A completion's legacy shape as chat-like entries: a map is unordered,
// so its entries sorted (greedy, the chosen token is among the K).
function legacyEntries(lp) {
    return lp.tokens.map((t, i) => {
        const top = Object.entries(lp.top_logprobs[i]).map(([token, logprob]) => ({ token, logprob }))
            .sort((a, b) => b.logprob - a.logprob);
        return { token: t, logprob: lp.token_logprobs[i], bytes: [...Buffer.from(t, 'utf8')], top_logprobs: top };
    });
}

async function logprobs(client, model, prompt, n) {
    const messages = [{ role: 'user', content: prompt }];
    const chat = { model, messages, max_tokens: n, logprobs: true, top_logprobs: K };
    const whole = await client.chat.completions.create({ ...chat, temperature: 0 });
    const c0 = whole.choices[0];
    console.log(JSON.stringify({ what: 'lp_chat', ...allFacts(c0.logprobs.content, true),
        joined: c0.logprobs.content.map((e) => e.token).join('') === c0.message.content,
        tokens: whole.usage.completion_tokens, content: c0.logprobs.content }));
    const stream = await client.chat.completions.create({ ...chat, temperature: 0, stream: true,
        stream_options: { include_usage: true } });
    const streamed = [];
    let usage = null;
    for await (const chunk of stream) {
        if (chunk.usage) usage = chunk.usage;
        for (const c of chunk.choices) if (c.logprobs) streamed.push(...c.logprobs.content);
    }
    console.log(JSON.stringify({ what: 'lp_chat_stream', ...allFacts(streamed, true),
        same: JSON.stringify(streamed) === JSON.stringify(c0.logprobs.content),
        tokens: usage && usage.completion_tokens }));
    const sampled = await client.chat.completions.create({ ...chat, temperature: 1, seed: 11 });
    console.log(JSON.stringify({ what: 'lp_chat_sampled',
                                 ...allFacts(sampled.choices[0].logprobs.content, false) }));
    const three = await client.chat.completions.create({ ...chat, temperature: 0, n: 3 });
    const per = three.choices.map((c) => JSON.stringify(c.logprobs.content));
    console.log(JSON.stringify({ what: 'lp_chat_n3', choices: three.choices.length,
        each: three.choices.every((c) => allFacts(c.logprobs.content, true).chosen),
        same: per.every((p) => p === JSON.stringify(c0.logprobs.content)) }));

    const comp = { model, prompt, max_tokens: n, logprobs: K };
    const legacy = await client.completions.create({ ...comp, temperature: 0 });
    const l0 = legacy.choices[0];
    let offsets = true, at = 0;
    l0.logprobs.tokens.forEach((t, i) => {
        if (l0.logprobs.text_offset[i] !== at) offsets = false;
        at += [...t].length;
    });
    console.log(JSON.stringify({ what: 'lp_completion', ...allFacts(legacyEntries(l0.logprobs), true),
        joined: l0.logprobs.tokens.join('') === l0.text, offsets,
        tokens: legacy.usage.completion_tokens }));
    const cstream = await client.completions.create({ ...comp, temperature: 0, n: 3, stream: true });
    const per3 = [[], [], []];
    for await (const chunk of cstream)
        for (const c of chunk.choices)
            if (c.logprobs) per3[c.index].push(...legacyEntries(c.logprobs).map((e) => e.logprob));
    const solo = l0.logprobs.token_logprobs;
    console.log(JSON.stringify({ what: 'lp_completion_stream_n3',
        same: per3.every((p) => JSON.stringify(p) === JSON.stringify(solo)) }));
}

// embeddings: strings and token arrays. PROMPT is the token ids of
// "Once upon a time" as JSON (with BOS, as the node adds it to text).
async function embeddings(client, model, prompt, dim) {
    const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
    const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
    const r = await client.embeddings.create({ model, input: ['Once upon a time', 'Once upon a time',
                                                              'The dog barked at the moon'] });
    const [a, b, c] = r.data.map((d) => d.embedding);
    const ids = await client.embeddings.create({ model, input: JSON.parse(prompt) });
    const t = ids.data[0].embedding;
    const one = await client.embeddings.create({ model, input: 'Once upon a time',
                                                 encoding_format: 'base64' });
    // Asked for explicitly, the client hands the base64 text over as it came.
    const raw = Buffer.from(one.data[0].embedding, 'base64');
    const b64 = Array.from(new Float32Array(raw.buffer, raw.byteOffset, raw.length / 4));
    const maxdiff = (x, y) => Math.max(...x.map((v, i) => Math.abs(v - y[i])));
    console.log(JSON.stringify({ what: 'embeddings', object: r.object, n: r.data.length,
        index: r.data.map((d) => d.index), dims: [a.length, b.length, c.length, t.length],
        dim_ok: [a, b, c, t].every((v) => v.length === dim),
        unit: [a, b, c, t].every((v) => Math.abs(norm(v) - 1) < 1e-5),
        identical: same(a, b), differ: maxdiff(a, c) > 1e-3,
        tokens_equal_text: maxdiff(a, t) < 1e-6, base64_equal: maxdiff(a, b64) < 1e-6,
        usage: r.usage }));
    const refused = [];
    for (const input of ['', [], [[]], [1, 99999]]) {
        try {
            await client.embeddings.create({ model, input });
            refused.push(null);
        } catch (e) {
            refused.push(failed('refused', e));
        }
    }
    console.log(JSON.stringify({ what: 'embeddings_refused', refused }));
}

const cases = { basic, big, sampling, bias, retrieve, logprobs, embeddings };

async function main() {
    const [baseURL, model, prompt, maxTokens, which = 'basic'] = process.argv.slice(2);
    const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
    if (!cases[which]) throw new Error(`no case ${which}`);
    await cases[which](client, model, prompt, Number(maxTokens));
}

main().catch((e) => {
    console.log(JSON.stringify({ what: 'error', status: e.status || null, message: String(e) }));
    process.exit(1);
});
