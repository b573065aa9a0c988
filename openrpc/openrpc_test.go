package openrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	jsonschema "github.com/santhosh-tekuri/jsonschema/v6"
)

var update = flag.Bool("update", false, "rewrite testdata/*.json")

// PostParams are board.post's params.
type PostParams struct {
	Text string `json:"text"`
}

// Note is a posted note.
type Note struct {
	ID     int       `json:"id"`
	Text   string    `json:"text"`
	Time   time.Time `json:"time"`
	Likes  []string  `json:"likes,omitempty"`
	Parent *Note     `json:"parent,omitempty"`
}

// testMux is a Mux with one of every kind of method and declaration.
func testMux() *jsonrpc.Mux {
	m := jsonrpc.NewMux()
	jsonrpc.Register(m, "board.post", func(context.Context, PostParams) (Note, error) { return Note{ID: 1}, nil })
	jsonrpc.Register(m, "add", func(_ context.Context, p [2]int) (int, error) { return p[0] + p[1], nil })
	jsonrpc.Register(m, "echo", func(_ context.Context, p []any) ([]any, error) { return p, nil })
	jsonrpc.RegisterNotification(m, "typing", func(context.Context, struct {
		Who string `json:"who"`
	}) error {
		return nil
	})
	m.HandleFunc("raw", func(context.Context, *jsonrpc.Request) (any, error) { return "raw", nil })
	m.Describe("board.post", jsonrpc.Description{Summary: "Posts a note.", Doc: "At most 140 characters.",
		Errors: []jsonrpc.ErrorInfo{{Code: -32010, Message: "too long", Data: reflect.TypeFor[int]()}}})
	jsonrpc.DescribeSent[Note](m, "board.posted", jsonrpc.Description{Summary: "A note was posted."})
	jsonrpc.DescribeTopic[Note](m, "board", jsonrpc.Description{Summary: "The board's news."})
	return m
}

var testInfo = Info{Title: "board", Version: "1.0.0", Servers: []Server{{Name: "local", URL: "ws://127.0.0.1:8080/rpc"}}}

// TestDocument pins the document of testMux (testdata/board.json; -update
// rewrites it) and checks every schema in it against the 2020-12
// meta-schema, the references resolving to components.schemas.
func TestDocument(t *testing.T) {
	doc, err := New(testMux(), testInfo)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "board.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("document differs from %s (go test -run TestDocument -update rewrites it):\n%s", golden, got)
	}
	checkSchemas(t, got)
}

// checkSchemas compiles, as 2020-12 schemas, every schema of an OpenRPC
// document: components.schemas, params, results, x-params, topics.
func checkSchemas(t *testing.T, text []byte) {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	const url = "mem:///openrpc.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	var ptrs []string
	d := doc.(map[string]any)
	if comps, ok := d["components"].(map[string]any); ok {
		for name := range comps["schemas"].(map[string]any) {
			ptrs = append(ptrs, "/components/schemas/"+name)
		}
	}
	for _, key := range []string{"methods", "x-notifications"} {
		ms, _ := d[key].([]any)
		for i, m := range ms {
			at := "/" + key + "/" + itoa(i)
			mo := m.(map[string]any)
			for j := range mo["params"].([]any) {
				ptrs = append(ptrs, at+"/params/"+itoa(j)+"/schema")
			}
			if mo["result"] != nil {
				ptrs = append(ptrs, at+"/result/schema")
			}
			if mo["x-params"] != nil {
				ptrs = append(ptrs, at+"/x-params")
			}
			if data, ok := mo["x-error-data"].(map[string]any); ok {
				for code := range data {
					ptrs = append(ptrs, at+"/x-error-data/"+code)
				}
			}
		}
	}
	ts, _ := d["x-topics"].([]any)
	for i := range ts {
		ptrs = append(ptrs, "/x-topics/"+itoa(i)+"/message")
	}
	if len(ptrs) < 10 {
		t.Fatalf("only %d schemas found in the document", len(ptrs))
	}
	for _, p := range ptrs {
		if _, err := c.Compile(url + "#" + p); err != nil {
			t.Errorf("schema at %s: %v", p, err)
		}
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestDiscover serves the document as rpc.discover over a Pipe: opt-in
// through Serve, the result is the document New makes, and rpc.discover
// is not one of the methods it lists. Without Serve the method is unknown.
func TestDiscover(t *testing.T) {
	for _, serve := range []bool{false, true} {
		m := testMux()
		if serve {
			Serve(m, testInfo)
		}
		a, b := jsonrpc.Pipe()
		server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: m})
		client := jsonrpc.NewPeer(b)
		var got json.RawMessage
		err := client.Call(t.Context(), jsonrpc.MethodDiscover, nil, &got)
		client.Close()
		server.Close()
		client.Wait()
		server.Wait()
		if !serve {
			if !errors.Is(err, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound}) {
				t.Errorf("without Serve: %v, want method not found", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		doc, _ := New(m, testInfo)
		want, _ := json.Marshal(doc)
		if !bytes.Equal(bytes.TrimSpace(got), want) {
			t.Errorf("rpc.discover:\n got %s\nwant %s", got, want)
		}
		if strings.Contains(string(got), `"name":"rpc.discover"`) {
			t.Error("rpc.discover lists itself")
		}
	}
	if p := panicOf(func() { m := testMux(); Serve(m, Info{}); Serve(m, Info{}) }); p == nil {
		t.Error("Serve twice did not panic")
	}
	if p := panicOf(func() {
		m := jsonrpc.NewMux()
		jsonrpc.Register(m, "bad", func(context.Context, chan int) (int, error) { return 0, nil })
		Serve(m, Info{})
	}); p == nil {
		t.Error("Serve of a Mux without a JSON form did not panic")
	}
}

func panicOf(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}
