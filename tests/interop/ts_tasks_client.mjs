// The official TypeScript SDK's client (its experimental 2025-11-25 tasks) against the
// toolwire gateway: `crunch`, which the tool list says may run as a task, called with
// callToolStream; and `tidy`, whose question comes on the task's result request. Prints
// one JSON object of what it saw; clients.py checks it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const url = new URL(process.argv[2]);
const client = new Client(
  { name: "interop-ts-tasks", version: "1.0.0" },
  { capabilities: { elicitation: { form: {} } } },
);
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  asked.push(request.params.message);
  return { action: "accept", content: { ok: true } };
});
await client.connect(new StreamableHTTPClientTransport(url));
const tools = await client.listTools();
const support = Object.fromEntries(
  tools.tools.map((t) => [t.name, t.execution?.taskSupport ?? null]),
);
const run = async (name, args) => {
  const seen = [];
  let text = null;
  for await (const message of client.experimental.tasks.callToolStream(
    { name, arguments: args },
    undefined,
    { task: { ttl: 60000 } },
  )) {
    seen.push(message.type);
    if (message.type === "result") {
      text = message.result.content.map((c) => c.text).join("\n");
    } else if (message.type === "error") {
      text = `error: ${message.error.message}`;
    }
  }
  return { seen: [...new Set(seen)], text };
};
const crunch = await run("crunch", { rounds: 3 });
const tidy = await run("tidy", { folder: "attic" });
console.log(JSON.stringify({
  taskCalls: client.getServerCapabilities()?.tasks?.requests?.tools?.call !== undefined,
  support,
  crunch,
  tidy,
  asked,
}));
await client.close();
