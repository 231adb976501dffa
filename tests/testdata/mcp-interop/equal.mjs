// An MCP client built from the official TypeScript SDK that records what
// a server answers, byte for byte as JSON: it lists every tool (all pages)
// and calls each tool of a plan, then prints the raw JSON-RPC results —
// or the JSON-RPC error of a call that fails — for the Go test to compare
// between a server used directly and the same server through the mesh.
//
//   node equal.mjs <plan.json> <command> [args...]
//
// plan.json is [{"name": "...", "arguments": {...}}, ...].
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";

const [planFile, command, ...args] = process.argv.slice(2);
const plan = JSON.parse(readFileSync(planFile, "utf8"));
const transport = new StdioClientTransport({ command, args, stderr: "ignore" });
const client = new Client({ name: "toolmesh-equal", version: "1.0.0" });
await client.connect(transport);

// The SDK parses (and may reshape) what it returns; the wire message is
// what the comparison is about, so keep each response as it arrived.
const raw = new Map();
const deliver = transport.onmessage;
transport.onmessage = (msg, extra) => {
  if (msg.id !== undefined && ("result" in msg || "error" in msg)) {
    raw.set(msg.id, "result" in msg ? { result: msg.result } : { error: msg.error });
  }
  deliver(msg, extra);
};
let lastId = -1;
const nextRaw = () => {
  const ids = [...raw.keys()].filter((id) => id > lastId);
  lastId = Math.max(...ids);
  return raw.get(lastId);
};

const out = { tools: [], calls: [] };
let cursor;
do {
  const page = await client.listTools(cursor ? { cursor } : undefined);
  out.tools.push(...nextRaw().result.tools);
  cursor = page.nextCursor;
} while (cursor);
for (const call of plan) {
  try {
    // Request, not callTool: callTool checks structuredContent against
    // the outputSchema and throws, hiding the result under comparison.
    await client.request({ method: "tools/call", params: call }, CallToolResultSchema);
  } catch {
    // The raw error response is recorded below.
  }
  out.calls.push({ name: call.name, ...nextRaw() });
}
console.log(JSON.stringify(out));
await client.close();
