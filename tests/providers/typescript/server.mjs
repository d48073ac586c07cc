// An MCP server of the TypeScript SDK (v1: @modelcontextprotocol/sdk, v2: @modelcontextprotocol/server)
// over stdio, for tinytools' client: node server.mjs v1|v2. Its tools: `add` (two integers, a closed
// object), `shout` (a string, answered in capitals, unstructured) and `fail` (an isError result).
const sdk = process.argv[2];
const { Server } = await import(sdk === "v1" ? "@modelcontextprotocol/sdk/server/index.js" : "@modelcontextprotocol/server");
const { StdioServerTransport } = await import(
  sdk === "v1" ? "@modelcontextprotocol/sdk/server/stdio.js" : "@modelcontextprotocol/server/stdio"
);
const tools = [
  {
    name: "add",
    description: "Add two integers.",
    inputSchema: {
      type: "object",
      properties: { a: { type: "integer" }, b: { type: "integer" } },
      required: ["a", "b"],
      additionalProperties: false,
    },
    outputSchema: { type: "object", properties: { sum: { type: "integer" } }, required: ["sum"] },
  },
  {
    name: "shout",
    description: "Say it louder.",
    inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  },
  { name: "fail", description: "Fail on purpose.", inputSchema: { type: "object", properties: {} } },
];
const call = async (params) => {
  const args = params.arguments ?? {};
  if (params.name === "add") {
    const sum = args.a + args.b;
    return { content: [{ type: "text", text: JSON.stringify({ sum }) }], structuredContent: { sum } };
  }
  if (params.name === "shout") return { content: [{ type: "text", text: String(args.text).toUpperCase() }] };
  return { content: [{ type: "text", text: `refused ${params.name}` }], isError: true };
};
const server = new Server({ name: `typescript-${sdk}`, version: "1.0.0" }, { capabilities: { tools: {} } });
if (sdk === "v1") {
  const types = await import("@modelcontextprotocol/sdk/types.js");
  server.setRequestHandler(types.ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(types.CallToolRequestSchema, async (request) => call(request.params));
} else {
  server.setRequestHandler("tools/list", async () => ({ tools }));
  server.setRequestHandler("tools/call", async (request) => call(request.params));
}
await server.connect(new StdioServerTransport());
