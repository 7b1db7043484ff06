// Drives a troupe server with the official npm `openai` client and prints
// one JSON object with what it got. Usage: node openai-client.cjs BASE_URL
// (NODE_PATH must point at the node_modules holding `openai`).
const OpenAI = require("openai");

async function main() {
  const client = new OpenAI({ baseURL: process.argv[2] + "/v1", apiKey: "unused", maxRetries: 0 });
  const out = {};

  const c = await client.completions.create({ model: "stories", prompt: process.argv[3], max_tokens: 48, temperature: 0 });
  out.completion = c.choices[0].text;
  out.completionUsage = c.usage;

  let streamed = "";
  let usage = null;
  const s = await client.completions.create({ model: "stories", prompt: process.argv[3], max_tokens: 48, temperature: 0,
    stream: true, stream_options: { include_usage: true } });
  for await (const chunk of s) {
    if (chunk.usage) usage = chunk.usage;
    for (const ch of chunk.choices) streamed += ch.text;
  }
  out.streamed = streamed;
  out.streamedUsage = usage;

  const chat = await client.chat.completions.create({ model: "stories", max_tokens: 24, temperature: 0, n: 2,
    messages: [{ role: "user", content: "Once upon a time" }] });
  out.chat = chat.choices.map((c) => c.message.content);

  let chatStreamed = "";
  let role = null;
  const cs = await client.chat.completions.create({ model: "stories", max_tokens: 24, temperature: 0, stream: true,
    messages: [{ role: "user", content: "Once upon a time" }] });
  for await (const chunk of cs) {
    const d = chunk.choices[0].delta;
    if (d.role && role === null) role = d.role;
    if (d.content) chatStreamed += d.content;
  }
  out.chatStreamed = chatStreamed;
  out.role = role;

  // embeddings.create asks for base64 unless told, and decodes it.
  const inputs = ["Once upon a time", "The end"];
  const eb = await client.embeddings.create({ model: "stories", input: inputs });
  const ef = await client.embeddings.create({ model: "stories", input: inputs, encoding_format: "float" });
  out.embeddings = { base64: eb.data.map((d) => Array.from(d.embedding)), float: ef.data.map((d) => d.embedding),
    promptTokens: eb.usage.prompt_tokens };

  try {
    await client.completions.create({ model: "stories", prompt: "x", temperature: 9 });
    out.error = null;
  } catch (e) {
    out.error = { status: e.status, type: e.error && e.error.type, param: e.error && e.error.param };
  }
  console.log(JSON.stringify(out));
}

main().catch((e) => { console.error(e); process.exit(1); });
