// An MCP client of the TypeScript SDK (v1: @modelcontextprotocol/sdk, v2: @modelcontextprotocol/client)
// against a tinytools server: node client.mjs v1|v2 http URL | stdio COMMAND ARGS...
// It lists the tools, makes a valid, an invalid and a progress-reporting call, then cancels a long
// call and reads the server's count of running calls while still connected; prints one JSON line.
const [sdk, transportKind, target, ...rest] = process.argv.slice(2);
const base = sdk === "v1" ? "@modelcontextprotocol/sdk/client" : "@modelcontextprotocol/client";
const { Client } = await import(sdk === "v1" ? `${base}/index.js` : base);
const { StreamableHTTPClientTransport } = await import(sdk === "v1" ? `${base}/streamableHttp.js` : base);
const { StdioClientTransport } = await import(sdk === "v1" ? `${base}/stdio.js` : `${base}/stdio`);

const transport =
  transportKind === "http"
    ? new StreamableHTTPClientTransport(new URL(target))
    : new StdioClientTransport({ command: target, args: rest, env: process.env });
const client = new Client({ name: `typescript-${sdk}`, version: "1.0.0" });
await client.connect(transport);

const call = (params, options) => (sdk === "v1" ? client.callTool(params, undefined, options) : client.callTool(params, options));
const counts = async () => (await call({ name: "lingering", arguments: {} })).structuredContent;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const until = async (wanted) => {
  let seen;
  for (let i = 0; i < 200; i++) {
    seen = await counts();
    if (seen.now === wanted) return seen;
    await sleep(50);
  }
  return seen;
};

const out = {};
out.tools = (await client.listTools()).tools.map((tool) => tool.name);
out.weather = await call({ name: "get_weather", arguments: { city: "Oslo" } });
out.invalid = await call({ name: "get_weather", arguments: { city: "Oslo", unit: "kelvin" } });
const heard = [];
out.count = await call({ name: "count", arguments: { label: sdk, steps: 3 } }, { onprogress: (p) => heard.push(p.message) });
out.heard = heard;
const before = await until(0);
const controller = new AbortController();
const abandoned = call(
  { name: "linger", arguments: { tag: `cancel-${sdk}-${transportKind}`, seconds: 600 } },
  { signal: controller.signal, timeout: 600000 },
).then(
  () => "answered",
  () => "aborted",
);
out.running = await until(before.now + 1);
controller.abort();
out.abandoned = await abandoned;
out.after = await until(before.now);
out.before = before;
out.end = (await call({ name: "linger_end", arguments: { tag: `cancel-${sdk}-${transportKind}` } })).structuredContent;
console.log(JSON.stringify(out));
await client.close();
process.exit(0);
