import { routeShapes } from './route-shape.ts';

/**
 * The MCP endpoint (spec §4.1, §5.1; issue 27): Streamable HTTP, stateless, JSON answers. Its bodies are JSON-RPC
 * messages the official SDK's transport reads and answers; the tools it offers call the other routes.
 */
const tags = ['mcp'];
const endpoint = {
  tags,
  summary: 'The MCP endpoint (Streamable HTTP, stateless, JSON answers): a cxm_ OAuth token or cx_cli_ token, or a cx_live_ key for its project',
};

export const mcpRoutes = routeShapes({
  mcpResourceMetadata: { tags, summary: 'OAuth protected-resource metadata of the MCP endpoint (RFC 9728)' },
  mcpPost: endpoint,
  mcpGet: endpoint,
  mcpDelete: endpoint,
});
