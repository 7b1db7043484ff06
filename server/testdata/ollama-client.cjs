// Drives a troupe server with the official npm `ollama` client and prints
// one JSON object with what it got. Usage:
//   node ollama-client.cjs BASE_URL MODEL PROMPT N [TOOLS_URL]
// (NODE_PATH must point at the node_modules holding `ollama`). N is the
// number of tokens to generate greedily from PROMPT. TOOLS_URL is a server
// whose template has tools and thinking (its output scripted by the Go
// test): a tool call, streamed and not, the conversation that follows it,
// and thinking on generate.
const { Ollama } = require("ollama");

async function main() {
  const [host, model, prompt, n] = process.argv.slice(2);
  const client = new Ollama({ host });
  const options = { num_predict: Number(n), temperature: 0 };
  const out = {};

  const g = await client.generate({ model, prompt, raw: true, options });
  out.generate = g.response;
  out.generateFinal = { done: g.done, done_reason: g.done_reason, eval_count: g.eval_count, prompt_eval_count: g.prompt_eval_count,
    total_duration: g.total_duration };

  let streamed = "";
  let parts = 0;
  let last = null;
  for await (const part of await client.generate({ model, prompt, raw: true, options, stream: true })) {
    streamed += part.response;
    parts++;
    last = part;
  }
  out.generateStreamed = streamed;
  out.generateParts = parts;
  out.generateStreamedFinal = { done: last.done, eval_count: last.eval_count };

  const messages = [{ role: "user", content: "Once upon a time" }];
  const c = await client.chat({ model: model + ":latest", messages, options: { num_predict: 24, temperature: 0 } });
  out.chat = c.message.content;
  out.chatRole = c.message.role;

  let chatStreamed = "";
  for await (const part of await client.chat({ model, messages, options: { num_predict: 24, temperature: 0 }, stream: true })) {
    chatStreamed += part.message.content;
  }
  out.chatStreamed = chatStreamed;

  out.list = (await client.list()).models.map((m) => ({ name: m.name, family: m.details.family }));
  const show = await client.show({ model });
  out.show = { family: show.details.family, arch: show.model_info["general.architecture"], capabilities: show.capabilities };
  out.ps = (await client.ps()).models.map((m) => ({ name: m.name, context_length: m.context_length }));
  out.version = (await client.version()).version;

  try {
    await client.generate({ model: "nope", prompt: "x" });
    out.error = null;
  } catch (e) {
    out.error = { name: e.name, status: e.status_code, message: e.error };
  }

  // A stream the client aborts after its first part: the server must
  // cancel the request (the Go test checks that nothing is left running).
  const long = await client.generate({ model, prompt, raw: true, stream: true, options: { num_predict: 400, temperature: 1, seed: 1 } });
  let aborted = false;
  try {
    for await (const part of long) {
      if (part.done) break;
      long.abort();
    }
  } catch (e) {
    aborted = e.name === "AbortError";
  }
  out.aborted = aborted;

  const toolsHost = process.argv[6];
  if (toolsHost) {
    const tc = new Ollama({ host: toolsHost });
    const tools = [{ type: "function", function: { name: "get_weather", description: "Weather in a city",
      parameters: { type: "object", properties: { city: { type: "string", description: "The city" } }, required: ["city"] } } }];
    const ask = [{ role: "user", content: "Weather in Paris?" }];
    const r = await tc.chat({ model, messages: ask, tools });
    out.toolChat = { thinking: r.message.thinking, content: r.message.content, calls: r.message.tool_calls, done_reason: r.done_reason };

    const streamed = { thinking: "", content: "", calls: [], parts: 0 };
    for await (const part of await tc.chat({ model, messages: ask, tools, stream: true })) {
      streamed.thinking += part.message.thinking || "";
      streamed.content += part.message.content;
      streamed.calls.push(...(part.message.tool_calls || []));
      streamed.parts++;
    }
    out.toolChatStreamed = streamed;

    // The conversation goes on: the client sends the call back, then the tool's answer.
    const city = r.message.tool_calls[0].function.arguments.city;
    const follow = await tc.chat({ model, tools, messages: [...ask, r.message, { role: "tool", content: `18 C in ${city}`, tool_name: "get_weather" }] });
    out.toolFollow = { thinking: follow.message.thinking, content: follow.message.content };

    const g = await tc.generate({ model, prompt: "Hello", think: true });
    out.thinkGenerate = { thinking: g.thinking, response: g.response };
    out.toolShow = (await tc.show({ model })).capabilities;
  }

  const e = await client.embed({ model, input: ["Once upon a time", "The end"] });
  out.embed = { count: e.embeddings.length, dim: e.embeddings[0].length };
  console.log(JSON.stringify(out));
}

main().catch((e) => { console.error(e); process.exit(1); });
