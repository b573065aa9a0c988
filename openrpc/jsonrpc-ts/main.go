// Command jsonrpc-ts writes TypeScript declarations for a page that talks
// to a server through jsonrpc.js: the types of the server's methods, of
// the notifications it sends and of its topics' messages, read from the
// server's OpenRPC document (package openrpc, docs/openrpc.md), and a
// typed view of jsonrpc.js's Client over them, TypedClient, whose call,
// notify, on and subscribe are checked against those types.
//
// Usage:
//
//	jsonrpc-ts [-in openrpc.json] [-out api.d.ts] [-client @peerwire/jsonrpc]
//
// -in is the OpenRPC document (default standard input), -out the
// declarations (default standard output), -client the module the page
// imports jsonrpc.js as (default @peerwire/jsonrpc; the realtime demo's
// page uses ./js/jsonrpc.js). A page casts its Client:
//
//	/** @type {import('./api.js').TypedClient} */
//	const rpc = new Client(url);
//
// tsgen's TestGenerate pins the output for a test document; the realtime demo's
// page is type-checked against the file made from its server
// (examples/realtime's TestPageTypes).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/peerwire/jsonrpc/internal/tsgen"
)

func main() {
	in := flag.String("in", "", "the OpenRPC document; default standard input")
	out := flag.String("out", "", "where to write the declarations; default standard output")
	client := flag.String("client", "@peerwire/jsonrpc", "the module specifier of jsonrpc.js, as the page imports it")
	flag.Parse()
	if err := run(*in, *out, *client); err != nil {
		fmt.Fprintln(os.Stderr, "jsonrpc-ts:", err)
		os.Exit(1)
	}
}

func run(in, out, client string) error {
	var text []byte
	var err error
	if in == "" {
		text, err = io.ReadAll(os.Stdin)
	} else {
		text, err = os.ReadFile(in)
	}
	if err != nil {
		return fmt.Errorf("failed to read the document: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(text, &doc); err != nil {
		return fmt.Errorf("failed to read the document: %w", err)
	}
	ts, err := tsgen.Generate(doc, client)
	if err != nil {
		return err
	}
	if out == "" {
		_, err = os.Stdout.Write(ts)
		return err
	}
	return os.WriteFile(out, ts, 0o644)
}
