package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/centrifugal/centrifuge"
	"github.com/coder/websocket"
)

// CentrifugeChannel is the channel every centrifuge client subscribes to.
const CentrifugeChannel = "w5"

// CentrifugeFleet: a centrifuge Node (v0.40.1, its memory broker, no
// history) serving its WebSocket handler; each client speaks centrifuge's
// own JSON protocol over coder/websocket (connect, then subscribe to one
// channel) and counts every publication pushed to it, however many a
// frame packs (centrifuge joins the replies queued for a client with
// newlines). A broadcast is one Node.Publish of the tick params.
type CentrifugeFleet struct{}

func (CentrifugeFleet) Name() string { return "centrifuge-ws" }

func (CentrifugeFleet) StartFleet(tb testing.TB, svc *Service, n int) *Fleet {
	node, err := centrifuge.New(centrifuge.Config{LogLevel: centrifuge.LogLevelNone})
	if err != nil {
		tb.Fatal(err)
	}
	var subscribed atomic.Int64
	node.OnConnecting(func(context.Context, centrifuge.ConnectEvent) (centrifuge.ConnectReply, error) {
		return centrifuge.ConnectReply{Credentials: &centrifuge.Credentials{UserID: "bench"}}, nil
	})
	node.OnConnect(func(c *centrifuge.Client) {
		c.OnSubscribe(func(_ centrifuge.SubscribeEvent, cb centrifuge.SubscribeCallback) {
			cb(centrifuge.SubscribeReply{}, nil)
			subscribed.Add(1)
		})
	})
	if err := node.Run(); err != nil {
		tb.Fatal(err)
	}
	h := centrifuge.NewWebsocketHandler(node, centrifuge.WebsocketConfig{
		CheckOrigin: func(*http.Request) bool { return true }, // loopback, no browser
	})
	addr, closeHTTP := HTTPServer(tb, h)
	var wg sync.WaitGroup
	clients := make([]*websocket.Conn, n)
	closeAll := func() {
		parallel(n, dialWorkers, func(i int) error {
			if clients[i] != nil {
				clients[i].CloseNow()
			}
			return nil
		})
		wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		node.Shutdown(ctx)
		closeHTTP()
	}
	err = parallel(n, dialWorkers, func(i int) error {
		c, err := centrifugeDial(addr)
		if err != nil {
			return err
		}
		clients[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			centrifugeRead(c, svc)
		}()
		return nil
	})
	if err == nil && !waitFor(10*time.Second, func() bool { return subscribed.Load() == int64(n) }) {
		err = fmt.Errorf("only %d of %d clients subscribed", subscribed.Load(), n)
	}
	if err != nil {
		closeAll()
		tb.Fatal(err)
	}
	tick := []byte(`{"n":1}`)
	return &Fleet{
		Broadcast: func() error {
			_, err := node.Publish(CentrifugeChannel, tick)
			return err
		},
		Stop: closeAll,
	}
}

// centrifugeDial connects to a centrifuge WebSocket handler and sends its
// connect and subscribe commands; the replies are read by centrifugeRead.
func centrifugeDial(addr string) (*websocket.Conn, error) {
	ctx := context.Background()
	c, _, err := websocket.Dial(ctx, "ws://"+addr+"/", &websocket.DialOptions{Subprotocols: []string{"centrifuge-json"}})
	if err != nil {
		return nil, err
	}
	cmds := `{"id":1,"connect":{}}` + "\n" + `{"id":2,"subscribe":{"channel":"` + CentrifugeChannel + `"}}`
	if err := c.Write(ctx, websocket.MessageText, []byte(cmds)); err != nil {
		c.CloseNow()
		return nil, err
	}
	return c, nil
}

// centrifugeRead reads c until it fails, counting each publication pushed
// (a line of a frame that holds a push) as one tick.
func centrifugeRead(c *websocket.Conn, svc *Service) {
	buf := make([]byte, 0, 512)
	push := []byte(`"push"`)
	for {
		_, rd, err := c.Reader(context.Background())
		if err != nil {
			return
		}
		if buf, err = readMsg(rd, buf); err != nil {
			return
		}
		for line := range bytes.SplitSeq(buf, []byte("\n")) {
			if bytes.Contains(line, push) {
				svc.Tick()
			}
		}
	}
}
