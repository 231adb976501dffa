// An MCP client built from the official TypeScript SDK against
// `toolmesh mcp --progressive`: it lists the tools (the search tool and
// the pins), asks the search tool for a query, waits for the tool list to
// grow (list_changed), lists again and calls the first tool found, then
// prints one JSON summary line for the Go test.
//
//   node search.mjs <toolmesh-binary> <nats-url> <query>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [bin, url, query] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: bin,
  args: ["mcp", "--server", url, "--progressive", "--pin", "echo"],
  stderr: "inherit",
});
const client = new Client({ name: "toolmesh-search-interop", version: "1.0.0" });
let changed;
const listChanged = new Promise((resolve) => { changed = resolve; });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed(true));
await client.connect(transport);

const summary = {};
summary.before = (await client.listTools()).tools.map((t) => t.name);
const res = await client.callTool({ name: "search_tools", arguments: { query, limit: 5 } });
summary.isError = res.isError ?? false;
summary.found = (res.structuredContent?.tools ?? []).map((t) => t.name);
summary.firstHasSchema = typeof res.structuredContent?.tools?.[0]?.inputSchema === "object";
summary.listChanged = await listChanged;
summary.after = (await client.listTools()).tools.map((t) => t.name);
await client.close();
console.log(JSON.stringify(summary));
