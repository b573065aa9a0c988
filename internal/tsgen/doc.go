// Package tsgen writes TypeScript declarations for a page's jsonrpc.js
// Client from a server's OpenRPC document (package openrpc): the command
// openrpc/jsonrpc-ts, and tests that check a page against its server's types.
package tsgen
