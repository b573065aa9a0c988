// Drives an httprpc.SessionServer with the official MCP TypeScript SDK's
// StreamableHTTPClientTransport, as a remote agent would: initialize (the
// session starts), tools/list, then tools/call of "ask", whose handler
// reports progress twice and calls sampling/createMessage back while its
// call runs; then DELETE of the session. Run by httprpc's
// TestMCPTypeScriptSDK:
//
//   cd .ci/mcp && npm ci && node http-client.mjs http://127.0.0.1:port/mcp
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';

setTimeout(() => {
  console.error('mcp-http-client: hard timeout');
  process.exit(1);
}, 30_000).unref();

const fail = (msg) => {
  console.error('mcp-http-client: ' + msg);
  process.exit(1);
};

const client = new Client({ name: 'http-client', version: '1.0.0' }, { capabilities: { sampling: {} } });
client.setRequestHandler(CreateMessageRequestSchema, async () => ({
  role: 'assistant',
  content: { type: 'text', text: 'sampled' },
  model: 'stub',
}));
const transport = new StreamableHTTPClientTransport(new URL(process.argv[2]));
await client.connect(transport);
if (!transport.sessionId) fail('no session id after initialize');

const { tools } = await client.listTools();
if (tools.length !== 1 || tools[0].name !== 'ask') fail('tools/list: ' + JSON.stringify(tools));

let progress = 0;
const res = await client.callTool({ name: 'ask', arguments: {} }, undefined, { onprogress: () => progress++ });
if (res.content?.[0]?.text !== 'sampled') fail('tools/call: ' + JSON.stringify(res));
if (progress !== 2) fail(`${progress} progress notifications, want 2`);

await transport.terminateSession();
await client.close();
console.log(`mcp-http-client: ok (session ${transport.sessionId ?? 'ended'}, ${progress} progress)`);
