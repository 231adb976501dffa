// An MCP client built from the official TypeScript SDK: through
// `toolmesh mcp --namespace fs` (stdio) it calls server-filesystem's
// read_media_file, bridged onto the mesh, and prints the result as JSON.
//
//   node media.mjs <toolmesh-binary> <nats-url> <path>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, url, path] = process.argv.slice(2);
const transport = new StdioClientTransport({ command: bin, args: ["mcp", "--server", url, "--namespace", "fs"], stderr: "inherit" });
const client = new Client({ name: "toolmesh-media", version: "1.0.0" });
await client.connect(transport);
const tools = (await client.listTools()).tools;
const res = await client.callTool({ name: "read_media_file", arguments: { path } });
console.log(JSON.stringify({ tools: tools.map((t) => t.name), annotations: tools.find((t) => t.name === "read_media_file")?.annotations ?? null, result: res }));
await client.close();
