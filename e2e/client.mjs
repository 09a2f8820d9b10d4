// client.mjs drives `flameox mcp serve` over stdio with the official TypeScript MCP SDK,
// an implementation independent of the Go server's SDK. It lists the tools, pages through
// a file by submitting next_page unchanged, and provokes a failure. The SDK validates each
// structuredContent against the advertised outputSchema, failures included.
//
// usage: node client.mjs FLAMEOX_BINARY FILE
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, file] = process.argv.slice(2);
const transport = new StdioClientTransport({ command: bin, args: ["mcp", "serve"], stderr: "inherit" });
const client = new Client({ name: "flameox-e2e", version: "1.0.0" });
await client.connect(transport);

const report = {};
const { tools } = await client.listTools();
report.tools = tools.map((t) => ({
  name: t.name,
  readOnlyHint: t.annotations?.readOnlyHint,
  openWorldHint: t.annotations?.openWorldHint,
  sourcesMaxItems: t.inputSchema.properties.sources.maxItems,
  hasOutputSchema: t.outputSchema?.type === "object",
}));

let args = { sources: [{ kind: "path", path: file }], page_size: 4 };
const pages = [];
for (let i = 0; i < 20; i++) {
  const res = await client.callTool({ name: "preview_artifact", arguments: args });
  const sc = res.structuredContent;
  const text = JSON.parse(res.content[0].text);
  if (JSON.stringify(text) !== JSON.stringify(sc)) throw new Error("text block differs from structuredContent");
  if (res.isError) throw new Error("page failed: " + res.content[0].text);
  pages.push(sc.blocks[sc.blocks.length - 1].rows.map((r) => r.line));
  if (!sc.next_page) break;
  args = sc.next_page.arguments;
}
report.pages = pages;

const bad = await client.callTool({
  name: "preview_artifact",
  arguments: { sources: [{ kind: "path", path: file, format: "pstats" }] },
});
report.failure = {
  isError: bad.isError,
  code: bad.structuredContent.code,
  field_path: bad.structuredContent.field_path,
  accepted_values: bad.structuredContent.accepted_values,
};
await client.close();
console.log(JSON.stringify(report, null, 2));
