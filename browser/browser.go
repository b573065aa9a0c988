// Package browser serves jsonrpc.js, the JSON-RPC 2.0 client for web pages
// that goes with this library, from a Go program: no npm, no build step.
//
// jsonrpc.js is an ES module with no dependencies (TypeScript declarations
// in jsonrpc.d.ts, next to it): a symmetric peer over one WebSocket that
// calls, notifies and serves the methods the server calls, with per-call
// timeouts and AbortSignal, reconnection with backoff, and topic
// subscriptions that recover what was published while the page was away.
//
// The happy path: mount the files next to the WebSocket endpoint,
//
//	mux.Handle("/rpc", &ws.Server{Peer: jsonrpc.Options{Handler: h}})
//	mux.Handle("/js/", http.StripPrefix("/js/", browser.Handler()))
//
// and import them from the page:
//
//	<script type="module">
//	  import { Client } from '/js/jsonrpc.js';
//	  const rpc = new Client(new URL('/rpc', location.href.replace(/^http/, 'ws')));
//	  await rpc.start();
//	  console.log(await rpc.call('hello', { name: 'page' }, { timeout: 5000 }));
//	</script>
package browser

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
)

//go:embed jsonrpc.js errors.js wire.js topics.js jsonrpc.d.ts package.json README.md LICENSE
var files embed.FS

// FS returns the package's files at its root: jsonrpc.js and the modules
// it imports (errors.js, wire.js, topics.js), jsonrpc.d.ts, package.json,
// README.md and LICENSE. It is read-only and safe for concurrent use.
func FS() fs.FS { return files }

// contentTypes are the types Handler sets itself: the system's MIME table
// may map .ts to video/mp2t, and a module script must be JavaScript.
var contentTypes = map[string]string{
	".js":   "text/javascript; charset=utf-8",
	".ts":   "text/plain; charset=utf-8",
	".json": "application/json",
	".md":   "text/markdown; charset=utf-8",
}

// Handler returns an http.Handler that serves FS's files, with request
// paths relative to its root: mount it with http.StripPrefix. It answers
// 404 for anything else, directory listings included.
func Handler() http.Handler {
	fileServer := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := path.Clean("/" + r.URL.Path)[1:]
		if _, err := fs.Stat(files, name); err != nil || name == "" || name == "." {
			http.NotFound(w, r)
			return
		}
		if ct, ok := contentTypes[path.Ext(name)]; ok {
			w.Header().Set("Content-Type", ct)
		}
		fileServer.ServeHTTP(w, r)
	})
}
