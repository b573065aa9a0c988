package main

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/centrifugal/centrifuge"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
	"github.com/peerwire/jsonrpc/ws"
)

// shutdown stops a ws.Server within a few seconds.
func shutdown(srv *ws.Server) {
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	srv.Shutdown(c)
}

// oursGroup: every connection joins a jsonrpc.Group; a broadcast is the
// topic.message notification a Hub would send, without history.
func oursGroup(n, pack int) (*server, http.Handler) {
	g := &jsonrpc.Group{}
	srv := &ws.Server{
		MaxConnections: n + 100,
		Peer:           jsonrpc.Options{PackNotifications: pack},
		OnConnect:      func(p *jsonrpc.Peer, _ *http.Request) { g.Add(p) },
	}
	return &server{
		kind: "ours",
		publish: func(i int) error {
			return g.Notify(topic.MethodMessage, topic.Message{Topic: "t", Epoch: "E", Seq: uint64(i + 1), Data: note})
		},
		stop: func() { shutdown(srv) },
	}, srv
}

// oursHub: a topic.Hub on its default Memory history; subscribers call
// topic.subscribe.
func oursHub(n, pack int) (*server, http.Handler) {
	hub := &topic.Hub{Allow: topic.AllowAll}
	mux := jsonrpc.NewMux()
	hub.Register(mux)
	srv := &ws.Server{
		MaxConnections: n + 100,
		Peer:           jsonrpc.Options{Handler: mux, PackNotifications: pack},
	}
	data := json.RawMessage(note)
	return &server{
		kind: "ourshub",
		publish: func(int) error {
			_, err := hub.Publish(ctx, "t", data)
			return err
		},
		stop: func() { shutdown(srv); hub.Close() },
	}, srv
}

// centrifugeServer: a centrifuge Node on its memory broker that lets every
// connection in and every subscribe through; with history > 0 each
// publication is kept in the channel's history (that many, 5 minutes).
func centrifugeServer(history int) (*server, http.Handler, error) {
	node, err := centrifuge.New(centrifuge.Config{LogLevel: centrifuge.LogLevelNone})
	if err != nil {
		return nil, nil, err
	}
	node.OnConnecting(func(context.Context, centrifuge.ConnectEvent) (centrifuge.ConnectReply, error) {
		return centrifuge.ConnectReply{Credentials: &centrifuge.Credentials{UserID: "fanout"}}, nil
	})
	node.OnConnect(func(c *centrifuge.Client) {
		c.OnSubscribe(func(_ centrifuge.SubscribeEvent, cb centrifuge.SubscribeCallback) {
			cb(centrifuge.SubscribeReply{}, nil)
		})
	})
	if err := node.Run(); err != nil {
		return nil, nil, err
	}
	var opts []centrifuge.PublishOption
	if history > 0 {
		opts = append(opts, centrifuge.WithHistory(history, 5*time.Minute))
	}
	h := centrifuge.NewWebsocketHandler(node, centrifuge.WebsocketConfig{
		CheckOrigin: func(*http.Request) bool { return true }, // loopback, no browser
	})
	return &server{
		kind: "centrifuge",
		publish: func(int) error {
			_, err := node.Publish("t", note, opts...)
			return err
		},
		stop: func() {
			c, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			node.Shutdown(c)
		},
	}, h, nil
}
