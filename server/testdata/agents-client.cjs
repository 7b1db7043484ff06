// Drives a troupe server whose output is scripted (a weather tool call,
// then an answer once the tool's result is in the conversation; JSON
// under a schema) with the official npm clients agents use, and prints
// one JSON object with what each got. Usage: node agents-client.cjs
// BASE_URL (NODE_PATH must point at the node_modules holding `openai`,
// `@openai/agents`, `@anthropic-ai/sdk` and `zod`).
const OpenAI = require("openai");
const Anthropic = require("@anthropic-ai/sdk");
const agents = require("@openai/agents");
const { z } = require("zod");

const base = process.argv[2];
const weatherTool = { type: "function", name: "get_weather", description: "Weather in a city", strict: false,
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } };

// step runs one check, recording its result or its error under name.
async function step(out, name, fn) {
  try {
    out[name] = await fn();
  } catch (e) {
    out[name] = { error: String(e && e.message || e), status: e && e.status };
  }
}

async function responses(out) {
  const client = new OpenAI({ baseURL: base + "/v1", apiKey: "unused", maxRetries: 0 });
  await step(out, "responsesText", async () => {
    const r = await client.responses.create({ model: "stories", input: "Say hello.", max_output_tokens: 20 });
    return { text: r.output_text, status: r.status, id: r.id };
  });
  await step(out, "responsesLoop", async () => {
    const r = await client.responses.create({ model: "stories", input: "Weather in Paris?", tools: [weatherTool] });
    const call = r.output.find((o) => o.type === "function_call");
    const r2 = await client.responses.create({ model: "stories", previous_response_id: r.id, tools: [weatherTool],
      input: [{ type: "function_call_output", call_id: call.call_id, output: "sunny" }] });
    return { call: call.name + " " + call.arguments, answer: r2.output_text };
  });
  await step(out, "responsesStream", async () => {
    const s = client.responses.stream({ model: "stories", input: "Say hello.", max_output_tokens: 20 });
    let deltas = "";
    s.on("response.output_text.delta", (e) => { deltas += e.delta; });
    const final = await s.finalResponse();
    return { deltas, text: final.output_text, status: final.status };
  });
  await step(out, "responsesStreamTools", async () => {
    const s = client.responses.stream({ model: "stories", input: "Weather in Paris?", tools: [weatherTool], tool_choice: "required" });
    let args = "";
    s.on("response.function_call_arguments.delta", (e) => { args += e.delta; });
    const final = await s.finalResponse();
    const call = final.output.find((o) => o.type === "function_call");
    return { args, call: call && call.name + " " + call.arguments };
  });
  await step(out, "responsesSchema", async () => {
    const r = await client.responses.create({ model: "stories", input: "Which city?",
      text: { format: { type: "json_schema", name: "city", strict: true,
        schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false } } } });
    return JSON.parse(r.output_text);
  });
  await step(out, "responsesBad", async () => {
    await client.responses.create({ model: "stories", input: "x", previous_response_id: "resp_missing" });
    return "accepted";
  });
}

async function chatRunTools(out) {
  const client = new OpenAI({ baseURL: base + "/v1", apiKey: "unused", maxRetries: 0 });
  await step(out, "runTools", async () => {
    let calls = 0;
    const runner = client.chat.completions.runTools({ model: "stories", tool_choice: "required",
      messages: [{ role: "user", content: "Weather in Paris?" }],
      tools: [{ type: "function", function: { name: "get_weather", parameters: weatherTool.parameters,
        function: (args) => { calls++; return "sunny"; }, parse: JSON.parse } }] }, { maxChatCompletions: 3 });
    const final = await runner.finalChatCompletion();
    return { calls, finish: final.choices[0].finish_reason };
  });
}

async function agentLoop(out) {
  await step(out, "agent", async () => {
    agents.setTracingDisabled(true);
    agents.setDefaultOpenAIClient(new OpenAI({ baseURL: base + "/v1", apiKey: "unused", maxRetries: 0 }));
    let calls = 0;
    const getWeather = agents.tool({ name: "get_weather", description: "Weather in a city",
      parameters: z.object({ city: z.string() }), execute: async ({ city }) => { calls++; return "sunny in " + city; } });
    const agent = new agents.Agent({ name: "weather", instructions: "Answer briefly.", model: "stories", tools: [getWeather] });
    const result = await agents.run(agent, "Weather in Paris?");
    return { calls, final: result.finalOutput };
  });
}

async function anthropic(out) {
  const client = new Anthropic({ baseURL: base, apiKey: "unused", maxRetries: 0 });
  const tools = [{ name: "get_weather", description: "Weather in a city", input_schema: weatherTool.parameters }];
  await step(out, "messagesText", async () => {
    const m = await client.messages.create({ model: "stories", max_tokens: 20, system: "Be brief.",
      messages: [{ role: "user", content: "Say hello." }] });
    return { text: m.content.map((b) => b.text).join(""), stop: m.stop_reason, usage: m.usage.output_tokens };
  });
  await step(out, "messagesStream", async () => {
    const s = client.messages.stream({ model: "stories", max_tokens: 20, messages: [{ role: "user", content: "Say hello." }] });
    let deltas = "";
    s.on("text", (t) => { deltas += t; });
    const final = await s.finalMessage();
    return { deltas, text: final.content.map((b) => b.text).join(""), stop: final.stop_reason };
  });
  await step(out, "messagesTools", async () => {
    const msgs = [{ role: "user", content: "Weather in Paris?" }];
    const m = await client.messages.create({ model: "stories", max_tokens: 100, tools, tool_choice: { type: "any" }, messages: msgs });
    const use = m.content.find((b) => b.type === "tool_use");
    msgs.push({ role: "assistant", content: m.content });
    msgs.push({ role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "sunny" }] });
    const s = client.messages.stream({ model: "stories", max_tokens: 100, tools, messages: msgs });
    const final = await s.finalMessage();
    return { call: use.name + " " + JSON.stringify(use.input), stop: m.stop_reason, answer: final.content.map((b) => b.text).join("") };
  });
  await step(out, "messagesStreamTool", async () => {
    const s = client.messages.stream({ model: "stories", max_tokens: 100, tools, tool_choice: { type: "tool", name: "get_weather" },
      messages: [{ role: "user", content: "Weather in Paris?" }] });
    const final = await s.finalMessage();
    const use = final.content.find((b) => b.type === "tool_use");
    return { call: use && use.name + " " + JSON.stringify(use.input), stop: final.stop_reason };
  });
  await step(out, "countTokens", async () => {
    const c = await client.messages.countTokens({ model: "stories", messages: [{ role: "user", content: "Say hello." }] });
    return c.input_tokens;
  });
  await step(out, "messagesBad", async () => {
    await client.messages.create({ model: "stories", max_tokens: 20, messages: [{ role: "user", content: [{ type: "image",
      source: { type: "base64", media_type: "image/png", data: "AAAA" } }] }] });
    return "accepted";
  });
}

async function main() {
  const out = {};
  await responses(out);
  await chatRunTools(out);
  await agentLoop(out);
  await anthropic(out);
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => { console.error(e); process.exit(1); });
