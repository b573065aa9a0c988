// An MCP server on the official TypeScript SDK's
// StreamableHTTPServerTransport (one session), for httprpc's
// TestDialTypeScriptSDK to dial: tools/list (which also pushes
// notifications/tools/list_changed on the standalone stream), and
// tools/call of "ask", which reports progress twice and calls
// sampling/createMessage back while its call runs. Prints its URL, then
// serves until killed.
//
//   cd .ci/mcp && npm ci && node http-server.mjs
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  CreateMessageResultSchema,
  ListToolsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';

setTimeout(() => process.exit(1), 60_000).unref(); // never outlive a test

const server = new Server({ name: 'ts-server', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
server.setRequestHandler(ListToolsRequestSchema, async () => {
  setTimeout(() => server.notification({ method: 'notifications/tools/list_changed' }), 10);
  return { tools: [{ name: 'ask', inputSchema: { type: 'object' } }] };
});
server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
  const token = req.params._meta?.progressToken;
  const progress = (n) =>
    token === undefined
      ? Promise.resolve()
      : extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: n, total: 2 } });
  await progress(1);
  const sampled = await extra.sendRequest(
    { method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 10 } },
    CreateMessageResultSchema,
  );
  await progress(2);
  return { content: [{ type: 'text', text: sampled.content.text }] };
});
const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID() });
await server.connect(transport);
const http = createServer((req, res) => transport.handleRequest(req, res));
http.listen(0, '127.0.0.1', () => console.log(`http://127.0.0.1:${http.address().port}/mcp`));
