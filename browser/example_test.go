package browser_test

import (
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/browser"
	"github.com/peerwire/jsonrpc/ws"
)

// A Go server that serves the page's JSON-RPC client next to its
// WebSocket endpoint: the page imports /js/jsonrpc.js.
func ExampleHandler() {
	mux := http.NewServeMux()
	mux.Handle("/rpc", &ws.Server{Peer: jsonrpc.Options{Handler: jsonrpc.NewMux()}})
	mux.Handle("/js/", http.StripPrefix("/js/", browser.Handler()))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/js/jsonrpc.js")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Header.Get("Content-Type"))
	fmt.Println(strings.Contains(string(body), "export class Client"))
	// Output:
	// text/javascript; charset=utf-8
	// true
}

// The files, for a program that bundles them its own way.
func ExampleFS() {
	names, _ := fs.Glob(browser.FS(), "*")
	fmt.Println(names)
	// Output: [LICENSE README.md errors.js jsonrpc.d.ts jsonrpc.js package.json topics.js wire.js]
}
