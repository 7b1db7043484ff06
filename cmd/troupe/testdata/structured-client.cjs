// Drives a troupe server's structured outputs and tool calls with the
// official npm `openai` client and its zod helpers, unchanged, and prints one
// JSON object with what it got (cmd/troupe: TestStructuredNodeClient checks
// it). Usage: node structured-client.cjs BASE_URL MODEL (NODE_PATH must
// point at the node_modules holding `openai` and `zod`).
const OpenAI = require("openai");
const { zodResponseFormat, zodFunction } = require("openai/helpers/zod");
const { z } = require("zod");

// Bounded so that a tiny model at temperature 1 finishes them.
const Event = z.object({
  name: z.string().max(16),
  day: z.number().int().min(1).max(31),
  participants: z.array(z.string().max(8)).max(3),
  priority: z.enum(["low", "high"]),
  note: z.string().max(10).nullable(),
});
const Weather = z.object({ location: z.string().max(20), unit: z.enum(["celsius", "fahrenheit"]) });
const Search = z.object({ query: z.string().min(1).max(16), limit: z.number().int().min(1).max(10) });

const maxTokens = 300;

// The outcome of a helper call: its parsed values, or the error it threw
// (a LengthFinishReasonError is a choice cut by max_tokens, not a failure).
async function attempt(fn) {
  try {
    return await fn();
  } catch (e) {
    return { error: { name: e.constructor && e.constructor.name, message: String(e.message || e), status: e.status } };
  }
}

function message(c) {
  const ch = c.choices[0];
  return {
    finish_reason: ch.finish_reason,
    content: ch.message.content,
    parsed: ch.message.parsed === undefined ? null : ch.message.parsed,
    tool_calls: (ch.message.tool_calls || []).map((tc) => ({
      id: tc.id, type: tc.type, name: tc.function.name, arguments: tc.function.arguments,
      parsed_arguments: tc.function.parsed_arguments === undefined ? null : tc.function.parsed_arguments,
    })),
  };
}

// rawToolStream reads a streamed tool-call response chunk by chunk and
// records, per call index, whether the first delta carried the id and the
// name (OpenAI's order) and the arguments as concatenated.
async function rawToolStream(client, body) {
  const s = await client.chat.completions.create({ ...body, stream: true });
  const calls = [];
  let finish = null;
  for await (const chunk of s) {
    for (const ch of chunk.choices) {
      if (ch.finish_reason) finish = ch.finish_reason;
      for (const d of ch.delta.tool_calls || []) {
        if (!calls[d.index]) {
          calls[d.index] = { firstHasIdAndName: Boolean(d.id && d.function && d.function.name), id: d.id, name: d.function && d.function.name, arguments: "", deltas: 0 };
        } else if (d.id || (d.function && d.function.name)) {
          calls[d.index].repeatedIdOrName = true;
        }
        calls[d.index].deltas++;
        if (d.function && d.function.arguments) calls[d.index].arguments += d.function.arguments;
      }
    }
  }
  return { finish_reason: finish, calls: calls.filter(Boolean) };
}

async function main() {
  const client = new OpenAI({ baseURL: process.argv[2] + "/v1", apiKey: "unused", maxRetries: 0 });
  const model = process.argv[3];
  const messages = [{ role: "user", content: "Once upon a time" }];
  const out = {};
  const format = zodResponseFormat(Event, "event");
  out.eventSchema = format.json_schema.schema;
  out.weatherSchema = zodFunction({ name: "get_weather", parameters: Weather }).function.parameters;
  out.searchSchema = zodFunction({ name: "search", parameters: Search }).function.parameters;

  out.parse = [];
  for (const seed of [1, 2, 3]) {
    out.parse.push(await attempt(async () => message(await client.chat.completions.parse({
      model, messages, temperature: 1, seed, max_tokens: maxTokens, response_format: format }))));
  }
  out.parseStream = await attempt(async () => {
    const s = client.chat.completions.stream({ model, messages, temperature: 1, seed: 4, max_tokens: maxTokens, response_format: format });
    return message(await s.finalChatCompletion());
  });

  const tools = [zodFunction({ name: "get_weather", parameters: Weather }), zodFunction({ name: "search", parameters: Search })];
  const named = { type: "function", function: { name: "search" } };
  // One call each: with parallel calls allowed, a tiny model rarely stops
  // calling before max_tokens (TestStructuredGoClient covers that case).
  out.toolsRequired = await attempt(async () => message(await client.chat.completions.parse({
    model, messages, temperature: 1, seed: 5, max_tokens: maxTokens, tools, tool_choice: "required", parallel_tool_calls: false })));
  out.toolsNamed = await attempt(async () => message(await client.chat.completions.parse({
    model, messages, temperature: 1, seed: 6, max_tokens: maxTokens, tools, tool_choice: named, parallel_tool_calls: false })));
  out.toolsRequiredStream = await attempt(async () => {
    const s = client.chat.completions.stream({ model, messages, temperature: 1, seed: 7, max_tokens: maxTokens, tools, tool_choice: "required", parallel_tool_calls: false });
    return message(await s.finalChatCompletion());
  });
  out.toolsNamedRaw = await attempt(() => rawToolStream(client, { model, messages, temperature: 1, seed: 8, max_tokens: maxTokens, tools, tool_choice: named, parallel_tool_calls: false }));
  out.toolsRequiredRaw = await attempt(() => rawToolStream(client, { model, messages, temperature: 1, seed: 9, max_tokens: maxTokens, tools, tool_choice: "required", parallel_tool_calls: false }));

  // A response_format type that does not exist is a 400 (issue 18).
  out.badFormat = await attempt(async () => client.chat.completions.create({
    model, messages, max_tokens: 4, response_format: { type: "sound" } }));
  console.log(JSON.stringify(out));
}

main().catch((e) => { console.error(e); process.exit(1); });
