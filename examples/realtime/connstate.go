package main

import (
	"log/slog"
	"sync/atomic"

	"github.com/nats-io/nats.go"
)

// natsConn is a node's NATS connection and what the node knows of its
// state, kept by the connection's handlers, so that /healthz and a page's
// OnConnect read it without nats.Conn's lock: a reconnection holds that
// lock while it waits on a server that accepted the connection but does
// not answer (a paused one), for up to the connect timeout.
type natsConn struct {
	*nats.Conn
	status atomic.Int32           // a nats.Status
	server atomic.Pointer[string] // the URL of the server connected to
}

// newNATSConn returns a natsConn whose handlers are to be given to
// nats.Connect (handlers); call init once it is connected, or trying to.
func newNATSConn() *natsConn {
	c := &natsConn{}
	c.status.Store(int32(nats.CONNECTING))
	return c
}

// handlers keeps c's state, and logs the connection's events.
func (c *natsConn) handlers(log *slog.Logger) []nats.Option {
	up := func(nc *nats.Conn) {
		url := nc.ConnectedUrl()
		c.server.Store(&url)
		c.status.Store(int32(nats.CONNECTED))
	}
	return []nats.Option{
		nats.ConnectHandler(func(nc *nats.Conn) { up(nc); log.Info("nats connected", "url", c.serverURL()) }),
		nats.ReconnectHandler(func(nc *nats.Conn) { up(nc); log.Info("nats reconnected", "url", c.serverURL()) }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			c.status.CompareAndSwap(int32(nats.CONNECTED), int32(nats.RECONNECTING))
			log.Info("nats disconnected", "err", err)
		}),
		nats.ClosedHandler(func(*nats.Conn) {
			c.status.Store(int32(nats.CLOSED))
			log.Info("nats connection closed")
		}),
	}
}

// init takes nc's state as it is now: the handlers keep it from then on.
func (c *natsConn) init(nc *nats.Conn) {
	c.Conn = nc
	if nc.IsConnected() {
		url := nc.ConnectedUrl()
		c.server.Store(&url)
		c.status.CompareAndSwap(int32(nats.CONNECTING), int32(nats.CONNECTED))
	}
}

// connected reports whether the node is connected to NATS.
func (c *natsConn) connected() bool { return nats.Status(c.status.Load()) == nats.CONNECTED }

// statusText is the connection's status as /healthz says it.
func (c *natsConn) statusText() string { return nats.Status(c.status.Load()).String() }

// serverURL is the URL of the server connected to, or "" while there is none.
func (c *natsConn) serverURL() string {
	if !c.connected() {
		return ""
	}
	if p := c.server.Load(); p != nil {
		return *p
	}
	return ""
}
