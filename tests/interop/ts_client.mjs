// The official TypeScript SDK's client against the toolwire gateway: list, structured
// output (the SDK checks structuredContent against outputSchema), an approval answered
// through elicitation, a policy-denied call, a resource and a prompt. Prints one JSON
// object of what it saw; clients.py checks it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const url = new URL(process.argv[2]);
const client = new Client(
  { name: "interop-ts", version: "1.0.0" },
  { capabilities: { elicitation: { form: {} } } },
);
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  asked.push(request.params.message);
  return { action: "accept", content: { approve: true } };
});
await client.connect(new StreamableHTTPClientTransport(url));
const text = (result) => result.content.map((c) => c.text ?? `[${c.type}]`).join("\n");
const tools = await client.listTools();
const add = await client.callTool({ name: "add", arguments: { a: 2, b: 3 } });
const wipe = await client.callTool({ name: "wipe", arguments: { target: "db" } });
const shred = await client.callTool({ name: "shred", arguments: { target: "db" } });
const snap = await client.callTool({ name: "snapshot", arguments: { caption: "hi" } });
const read = await client.readResource({ uri: "app://readme" });
const prompt = await client.getPrompt({ name: "greet", arguments: { who: "Ada" } });
console.log(JSON.stringify({
  tools: tools.tools.map((t) => [t.name, Boolean(t.outputSchema)]),
  add: [add.isError ?? false, add.structuredContent],
  wipe: [wipe.isError ?? false, text(wipe)],
  asked: asked.length,
  shred: [shred.isError ?? false, text(shred)],
  snapshot: snap.content.map((c) => [c.type, c.mimeType ?? null, (c.data ?? c.text ?? "").length]),
  resource: read.contents[0].text,
  prompt: prompt.messages[0].content.text,
}));
await client.close();
