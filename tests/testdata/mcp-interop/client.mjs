// An MCP client built from the official TypeScript SDK: it lists the
// gateway's tools, calls echo, calls count with a progress callback and
// asks for a denied tool, then prints one JSON summary line for the Go test.
//
//   node client.mjs stdio <toolmesh-binary> <nats-url>
//   node client.mjs http <endpoint-url>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ProgressNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [mode, a, b] = process.argv.slice(2);
const transport = mode === "stdio"
  ? new StdioClientTransport({ command: a, args: ["mcp", "--server", b, "--deny", "sleep"], stderr: "inherit" })
  : new StreamableHTTPClientTransport(new URL(a));
const client = new Client({ name: "toolmesh-interop", version: "1.0.0" });
await client.connect(transport);

const summary = { protocolVersion: transport.protocolVersion ?? null };
summary.tools = (await client.listTools()).tools.map((t) => t.name);
summary.echo = await client.callTool({ name: "echo", arguments: { message: "hi from typescript" } });
// The SDK handles notifications in a microtask but responses at once, so
// a per-call onprogress callback misses notifications that arrive in the
// same stdio chunk as the response (the wire order is right). A
// connection-wide handler sees every one, in order, before callTool's
// promise settles; onprogress is still passed so a progressToken is sent.
const progress = [];
client.setNotificationHandler(ProgressNotificationSchema, (n) => { progress.push(n.params); });
summary.count = await client.callTool(
  { name: "count", arguments: { n: 3, interval_ms: 1 } },
  undefined,
  { onprogress: () => {} },
);
summary.progress = progress;
// A Problem must reach the model as an isError result, not as an SDK
// exception (the SDK checks structuredContent against an outputSchema).
try {
  summary.countError = await client.callTool({ name: "count", arguments: { n: "not a number" } });
} catch (e) {
  summary.countError = { thrown: String(e.message ?? e) };
}
try {
  await client.callTool({ name: "sleep", arguments: { seconds: 0 } });
  summary.denied = "callable";
} catch (e) {
  summary.denied = String(e.message ?? e);
}
console.log(JSON.stringify(summary));
await client.close();
