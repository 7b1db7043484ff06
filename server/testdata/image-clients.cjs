// Sends an image with the official npm `openai` and `ollama` clients and
// prints one JSON object with what they got. Usage: node image-clients.cjs
// BASE_URL PNG_BASE64 (NODE_PATH must point at the node_modules holding
// both).
const OpenAI = require("openai");
const { Ollama } = require("ollama");

async function main() {
  const base = process.argv[2], png = process.argv[3];
  const client = new OpenAI({ baseURL: base + "/v1", apiKey: "unused", maxRetries: 0 });
  const out = {};
  const messages = [{ role: "user", content: [
    { type: "text", text: "What is in this picture?" },
    { type: "image_url", image_url: { url: "data:image/png;base64," + png, detail: "high" } },
  ] }];

  const chat = await client.chat.completions.create({ model: "stories", max_tokens: 8, temperature: 0, messages });
  out.chat = chat.choices[0].message.content;
  out.promptTokens = chat.usage.prompt_tokens;

  let streamed = "";
  const s = await client.chat.completions.create({ model: "stories", max_tokens: 8, temperature: 0, messages, stream: true });
  for await (const chunk of s) {
    for (const ch of chunk.choices) streamed += ch.delta.content || "";
  }
  out.streamed = streamed;

  try {
    await client.chat.completions.create({ model: "stories", max_tokens: 8, messages: [{ role: "user", content: [
      { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }] }] });
  } catch (e) {
    out.error = { status: e.status, param: e.param };
  }

  const ollama = new Ollama({ host: base });
  const r = await ollama.chat({ model: "stories", messages: [{ role: "user", content: "What is this?", images: [png] }],
    options: { temperature: 0, num_predict: 8 } });
  out.ollama = r.message.content;
  const g = await ollama.generate({ model: "stories", prompt: "What is this?", images: [Buffer.from(png, "base64")],
    options: { temperature: 0, num_predict: 8 } });
  out.ollamaGenerate = g.response;
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => { console.error(e); process.exit(1); });
