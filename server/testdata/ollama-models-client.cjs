// Drives a troupe server of several models (server.Manager) with the
// official npm `ollama` client, as Ollama's own workflow goes, and prints
// one JSON object with what it got. Usage:
//   node ollama-models-client.cjs BASE_URL PULL_NAME MODEL_A MODEL_B
// (NODE_PATH must point at the node_modules holding `ollama`): pull
// PULL_NAME with progress, list, chat with MODEL_A, MODEL_B and MODEL_A
// again, ps, a chat with keep_alive 0, ps, delete PULL_NAME, list.
const { Ollama } = require("ollama");

async function main() {
  const [host, pullName, a, b] = process.argv.slice(2);
  const client = new Ollama({ host });
  const out = {};

  out.pull = [];
  for await (const p of await client.pull({ model: pullName, stream: true })) {
    out.pull.push({ status: p.status, total: p.total || 0, completed: p.completed || 0 });
  }
  out.listAfterPull = (await client.list()).models.map((m) => m.name);

  const messages = [{ role: "user", content: "Once upon a time" }];
  const options = { num_predict: 16, temperature: 0 };
  const chat = async (model, extra) => (await client.chat({ model, messages, options, ...extra })).message.content;
  out.chatA = await chat(a);
  out.chatB = await chat(b);
  out.chatAAgain = await chat(a);
  out.chatPulled = await chat(pullName);
  out.ps = (await client.ps()).models.map((m) => ({ name: m.name, size: m.size, expires_at: m.expires_at }));

  out.chatBUnload = await chat(b, { keep_alive: 0 });
  out.psAfterUnload = (await client.ps()).models.map((m) => m.name);

  await client.delete({ model: pullName });
  out.listAfterDelete = (await client.list()).models.map((m) => m.name);
  try {
    await client.chat({ model: pullName, messages, options });
    out.deletedAnswered = true;
  } catch (e) {
    out.deletedError = { status: e.status_code, message: e.error || e.message };
  }
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
