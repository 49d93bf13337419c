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

const cases = { basic, big };

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
