// Command chat is the README's first guide: a browser chat room with
// sign-in, a room whose last notes a page gets when it arrives and whose
// news survives a drop, and a private topic per user, on ws.Server,
// topic.Hub and the browser package's jsonrpc.js.
//
//	go run ./examples/guide/chat    # then open http://127.0.0.1:8080/ in two tabs
//
// It keeps everything in memory and is meant to be read: the README
// quotes it, and main_test.go runs it.
package main

import (
	"context"
	"embed"
	"flag"
	"log"
	"net/http"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/browser"
	"github.com/peerwire/jsonrpc/topic"
	"github.com/peerwire/jsonrpc/ws"
)

//go:embed index.html
var page embed.FS

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	flag.Parse()
	app := newApp()
	defer app.hub.Close()
	log.Printf("chat: open http://%s/ in two tabs", *addr)
	log.Fatal(http.ListenAndServe(*addr, app.routes()))
}

// routes serves the page, jsonrpc.js, sign-in and the WebSocket endpoint.
func (a *app) routes() http.Handler {
	mux := jsonrpc.NewMux()
	a.hub.Register(mux) // topic.subscribe, topic.unsubscribe
	jsonrpc.Register(mux, "chat.post", a.post)
	jsonrpc.Register(mux, "chat.dm", a.dm)

	h := http.NewServeMux()
	h.Handle("/", http.FileServerFS(page))
	h.Handle("/js/", http.StripPrefix("/js/", browser.Handler()))
	h.HandleFunc("POST /login", a.login)
	h.Handle("/rpc", a.requireSession(&ws.Server{Peer: jsonrpc.Options{Handler: mux}}))
	return h
}

// newApp makes the app and its Hub. Topics are private by default: a Hub
// with no Allow refuses every subscribe, so Allow says who may follow
// what: everyone the room, each user their own topic and no other's. The
// Hub keeps each topic's last day (up to 1 MiB): what a page that arrives
// is shown, and what one that drops catches up on.
func newApp() *app {
	a := &app{sessions: map[string]string{}}
	a.hub = &topic.Hub{
		Allow: func(ctx context.Context, name string) error {
			if name == "room" || name == "user:"+userFrom(ctx) {
				return nil
			}
			return topic.ErrNoSuchTopic
		},
		Store: &topic.Memory{MaxAge: 24 * time.Hour},
	}
	return a
}

// Note is what the room and the private topics carry.
type Note struct {
	From string `json:"from"`
	Text string `json:"text"`
}

// PostParams are chat.post's params; DMParams chat.dm's.
type (
	PostParams struct {
		Text string `json:"text"`
	}
	DMParams struct {
		To   string `json:"to"`
		Text string `json:"text"`
	}
)

// post publishes a note to the room, signed by who is signed in: the
// name comes from the ctx, which carries what requireSession found.
func (a *app) post(ctx context.Context, p PostParams) (Note, error) {
	if p.Text == "" || len(p.Text) > 1000 {
		return Note{}, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "text: 1 to 1000 bytes", nil)
	}
	n := Note{From: userFrom(ctx), Text: p.Text}
	_, err := a.hub.Publish(ctx, "room", n)
	return n, err
}

// dm publishes a note to one user's private topic, which only that user
// may subscribe to.
func (a *app) dm(ctx context.Context, p DMParams) (Note, error) {
	if p.To == "" || p.Text == "" || len(p.Text) > 1000 {
		return Note{}, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "to and text (1 to 1000 bytes) are required", nil)
	}
	n := Note{From: userFrom(ctx), Text: p.Text}
	_, err := a.hub.Publish(ctx, "user:"+p.To, n)
	return n, err
}
