package openrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	jsonschema "github.com/santhosh-tekuri/jsonschema/v6"
	"testing"

	"github.com/peerwire/jsonrpc"
)

// bigMux has n typed methods, each with params and result of a struct type
// of three fields (the same two Go types: distinct types would only make
// the document larger).
func bigMux(n int) *jsonrpc.Mux {
	m := jsonrpc.NewMux()
	for i := range n {
		jsonrpc.Register(m, fmt.Sprintf("svc.method%03d", i), func(context.Context, PostParams) (Note, error) { return Note{}, nil })
	}
	return m
}

// TestReviewDiscoverCostPerCall: rpc.discover rebuilds the whole document
// (reflection over every method's types) for every request, so a client
// sending a 50-byte request makes the server do work in proportion to the
// Mux, each time. A document made once (and again only when the Mux
// changes) costs a call no more than marshalling it.
func TestReviewDiscoverCostPerCall(t *testing.T) {
	m := bigMux(200)
	Serve(m, testInfo)
	doc, err := New(m, testInfo)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := json.Marshal(doc)
	h := m.Lookup(jsonrpc.MethodDiscover)
	req := &jsonrpc.Request{Method: jsonrpc.MethodDiscover}
	perCall := testing.AllocsPerRun(20, func() {
		v, err := h.ServeRPC(t.Context(), req)
		if err != nil || v == nil {
			t.Fatal(err)
		}
	})
	build := testing.AllocsPerRun(20, func() { New(m, testInfo) })
	t.Logf("200 methods: document %d bytes; rpc.discover handler %.0f allocs per call; New %.0f allocs", len(text), perCall, build)
	if perCall > 10 {
		t.Errorf("rpc.discover's handler makes %.0f allocations per call on a 200-method Mux (the document, %d bytes, is rebuilt per request); want it made once", perCall, len(text))
	}
}

// pipePeers serves m over a Pipe and returns a client; cleanup closes both.
func pipePeers(t *testing.T, m *jsonrpc.Mux) *jsonrpc.Peer {
	a, b := jsonrpc.Pipe()
	server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: m})
	client := jsonrpc.NewPeer(b)
	t.Cleanup(func() {
		client.Close()
		server.Close()
		client.Wait()
		server.Wait()
	})
	return client
}

// level is a string with its own text form (an encoding.TextUnmarshaler).
type level string

// UnmarshalText reads a level.
func (l *level) UnmarshalText(b []byte) error { *l = level(b); return nil }

// MarshalText writes a level.
func (l level) MarshalText() ([]byte, error) { return []byte(l), nil }

// TestReviewTextParamsDescribedAsTheirWireForm: a method whose params are
// an encoding.TextMarshaler scalar is called with a one-element array,
// ["127.0.0.1"], which Typed takes; the document says its params member
// is a bare string (x-params {"type":"string"}, params [], no
// paramStructure), which JSON-RPC does not allow (the library's own Call
// refuses it: "params must be a JSON object or array") and which refuses
// the array Typed takes. jsonrpc-ts then types call('ping', '127.0.0.1'),
// which no server takes.
func TestReviewTextParamsDescribedAsTheirWireForm(t *testing.T) {
	m := jsonrpc.NewMux()
	jsonrpc.Register(m, "ping", func(_ context.Context, a level) (string, error) { return string(a), nil })
	var got string
	if err := pipePeers(t, m).Call(t.Context(), "ping", []string{"127.0.0.1"}, &got); err != nil || got != "127.0.0.1" {
		t.Fatalf(`ping ["127.0.0.1"]: %q, %v`, got, err)
	}
	doc, err := New(m, testInfo)
	if err != nil {
		t.Fatal(err)
	}
	mo := doc["methods"].([]any)[0].(map[string]any)
	text, _ := json.Marshal(mo)
	xp, ok := mo["x-params"]
	if !ok {
		return // described as a list of params: fine if it is by position
	}
	sch := compileSchema(t, xp)
	if err := sch.Validate([]any{"127.0.0.1"}); err != nil {
		t.Errorf(`the params Typed takes, ["127.0.0.1"], do not validate against the method's x-params: %v
method object: %s`, err, text)
	}
}

func compileSchema(t *testing.T, s any) *jsonschema.Schema {
	t.Helper()
	text, _ := json.Marshal(s)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("mem:///s.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("mem:///s.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// TestReviewDiscoverSurvivesLateRegister: Serve promises to panic when the
// Mux has no JSON form, but checks only at Serve; a method registered
// after it whose params have none (a channel) makes every rpc.discover
// fail with an internal error, for every client, from then on.
func TestReviewDiscoverSurvivesLateRegister(t *testing.T) {
	m := testMux()
	Serve(m, testInfo)
	jsonrpc.Register(m, "late", func(context.Context, chan int) (int, error) { return 0, nil })
	var got json.RawMessage
	if err := pipePeers(t, m).Call(t.Context(), jsonrpc.MethodDiscover, nil, &got); err != nil {
		t.Errorf("rpc.discover after registering a method whose params have no JSON form: %v (Register did not panic, Serve did not see it)", err)
	}
}

// Page is a generic result type.
type Page[T any] struct {
	Items []T `json:"items"`
}

// TestReviewDocumentNamesNoGoPackagePaths: a generic type's definition is
// named after its instantiation, import path included, so rpc.discover
// tells every client the server's Go package layout
// ("Page_github.com_peerwire_jsonrpc_openrpc.Note"). A name made of the
// type names alone (Page_Note) says what the client needs.
func TestReviewDocumentNamesNoGoPackagePaths(t *testing.T) {
	m := jsonrpc.NewMux()
	jsonrpc.Register(m, "notes", func(context.Context, struct{}) (Page[Note], error) { return Page[Note]{}, nil })
	doc, err := New(m, testInfo)
	if err != nil {
		t.Fatal(err)
	}
	defs := doc["components"].(map[string]any)["schemas"].(map[string]schemaT)
	for name := range defs {
		if strings.Contains(name, "github.com") {
			t.Errorf("definition %q names the Go import path", name)
		}
	}
}

type schemaT = map[string]any

var _ = reflect.TypeFor[int]
