// An MCP client built from the official TypeScript SDK that answers
// elicitation: it calls one tool and, when the server elicits, records
// the request and answers with the given content. It prints one JSON
// summary line for the Go test.
//
//   node elicit.mjs <elicit|none> <tool> <args-json> <answer-json> stdio <toolmesh-binary> <nats-url>
//   node elicit.mjs <elicit|none> <tool> <args-json> <answer-json> http <endpoint-url>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [capability, tool, args, answer, mode, a, b] = process.argv.slice(2);
const transport = mode === "stdio"
  ? new StdioClientTransport({ command: a, args: ["mcp", "--server", b], stderr: "inherit" })
  : new StreamableHTTPClientTransport(new URL(a));
const options = capability === "elicit" ? { capabilities: { elicitation: { form: {} } } } : {};
const client = new Client({ name: "toolmesh-elicit-interop", version: "1.0.0" }, options);
const asked = [];
if (capability === "elicit") {
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params);
    return { action: "accept", content: JSON.parse(answer) };
  });
}
await client.connect(transport);
const summary = { asked };
try {
  summary.result = await client.callTool({ name: tool, arguments: JSON.parse(args) }, undefined, { timeout: 60000 });
} catch (e) {
  summary.thrown = String(e.message ?? e);
}
console.log(JSON.stringify(summary));
await client.close();
