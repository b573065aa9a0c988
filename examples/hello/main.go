// Command hello shows a Peer at work over stdio: it starts a copy of itself
// as a child process and the two talk JSON-RPC 2.0 in both directions over
// the child's stdin and stdout, with LSP-style header framing.
//
//	go run ./examples/hello
//
// The parent calls the child's methods (one fails on purpose), sends a
// batch, and serves a method the child calls back while answering; the
// child reports progress to the parent with calls of its own, so that the
// parent has printed every step before the result comes back (a
// notification would be handled on its own goroutine, concurrently with the
// reply to the call it came with).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/stdio"
)

func main() {
	child := flag.Bool("child", false, "serve over stdin/stdout (used by the parent)")
	flag.Parse()
	log.SetFlags(0)
	var err error
	if *child {
		err = runChild()
	} else {
		err = runParent()
	}
	if err != nil {
		log.Fatal(err)
	}
}

// runChild serves wordcount and shout on stdin/stdout until stdin closes.
func runChild() error {
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "shout", func(ctx context.Context, p []string) (string, error) {
		if len(p) == 0 || p[0] == "" {
			return "", jsonrpc.NewError(-32001, "nothing to shout", nil)
		}
		return strings.ToUpper(p[0]) + "!", nil
	})
	jsonrpc.Register(mux, "wordcount", func(ctx context.Context, p struct{ Text string }) (int, error) {
		peer := jsonrpc.PeerFromContext(ctx)
		// Ask the parent for its stop words: a call back on the same pipe.
		var stop []string
		if err := peer.Call(ctx, "stopwords", nil, &stop); err != nil {
			return 0, err
		}
		n := 0
		for i, w := range strings.Fields(p.Text) {
			if err := peer.Call(ctx, "progress", map[string]any{"word": i + 1}, nil); err != nil {
				return 0, err
			}
			if !slices.Contains(stop, strings.ToLower(w)) {
				n++
			}
		}
		return n, nil
	})
	return jsonrpc.Serve(stdio.Stdio(), jsonrpc.Options{Handler: mux})
}

func runParent() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	conn, err := stdio.Command(exec.Command(self, "-child"))
	if err != nil {
		return err
	}
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "stopwords", func(ctx context.Context, p struct{}) ([]string, error) {
		fmt.Println("  child asked for stop words")
		return []string{"a", "the", "of"}, nil
	})
	jsonrpc.Register(mux, "progress", func(ctx context.Context, p struct{ Word int }) (any, error) {
		fmt.Printf("  progress: word %d\n", p.Word)
		return nil, nil
	})
	peer := jsonrpc.NewPeer(conn, jsonrpc.Options{Handler: mux})
	defer peer.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var s string
	if err := peer.Call(ctx, "shout", []string{"hello"}, &s); err != nil {
		return err
	}
	fmt.Println("shout(hello) =", s)

	var e *jsonrpc.Error
	if err := peer.Call(ctx, "shout", []string{""}, &s); errors.As(err, &e) {
		fmt.Printf("shout(\"\") failed as it should: code %d, %q\n", e.Code, e.Message)
	}

	var n int
	fmt.Println("wordcount(...):")
	if err := peer.Call(ctx, "wordcount", map[string]string{"text": "the gist of a peer"}, &n); err != nil {
		return err
	}
	fmt.Println("wordcount =", n)

	var a, b string
	batch := []jsonrpc.BatchElem{
		{Method: "shout", Params: []string{"batch"}, Result: &a},
		{Method: "shout", Params: []string{"of two"}, Result: &b},
	}
	if err := peer.Batch(ctx, batch); err != nil {
		return err
	}
	fmt.Println("batch =", a, b)
	return nil
}
