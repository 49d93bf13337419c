// The official `openai` npm package against an inferd node, for
// tests/e2e/http_api.sh: a streaming chat completion and a non-streaming
// completion, greedy, each printed as one JSON line {"what","text",...}.
//
//   NODE_PATH=DIR/node_modules node openai_client.cjs BASE_URL MODEL PROMPT MAX_TOKENS
'use strict';
const OpenAI = require('openai');

async function main() {
    const [baseURL, model, prompt, maxTokens] = process.argv.slice(2);
    const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
    const n = Number(maxTokens);

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

main().catch((e) => {
    console.log(JSON.stringify({ what: 'error', status: e.status || null, message: String(e) }));
    process.exit(1);
});
