package main

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// How a node's JetStream requests get past a NATS server that stops
// answering without closing (paused, cut off). Each request of a call
// gets opTimeout (a read readTimeout), and is made again while the call's
// ctx lasts: a bucket answers reads from any of its servers (direct
// gets), the stopped one too, so a read can time out while the others
// would answer, and made again it likely reaches another. A request that times out makes the
// node ask its server for a sign of life (a flush, within connCheck); a
// server that gives none is left for another at once
// (nats.Conn.ForceReconnect) rather than when the pings find it
// (pingInterval × (maxPingsOut+1), 4 s): about 1.25 s after it stopped. A request that finds no
// responder (a stream electing its leader) is made again after noResponderWait.
const (
	readTimeout     = 300 * time.Millisecond
	opTimeout       = 750 * time.Millisecond
	connCheck       = 500 * time.Millisecond
	noResponderWait = 100 * time.Millisecond
)

// try runs op with a ctx of at most timeout, again while it times out or
// finds no responder and ctx lasts.
func (s *store) try(ctx context.Context, timeout time.Duration, op func(context.Context) error) error {
	for {
		octx, cancel := context.WithTimeout(ctx, timeout)
		err := op(octx)
		cancel()
		switch {
		case err == nil || ctx.Err() != nil:
			return err
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
			s.suspect()
		case errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse):
			select {
			case <-ctx.Done():
				return err
			case <-time.After(noResponderWait):
			}
		default:
			return err
		}
	}
}

// suspect checks that the server the node is connected to answers, and
// leaves it for another if it does not. One check at a time: the others
// go on trying.
func (s *store) suspect() {
	nc := s.nc
	if nc == nil || !s.checking.CompareAndSwap(false, true) {
		return
	}
	defer s.checking.Store(false)
	if !nc.IsConnected() {
		return
	}
	if err := nc.FlushTimeout(connCheck); err != nil && nc.IsConnected() {
		s.log.Info("the NATS server does not answer: leaving it for another", "server", nc.ConnectedUrl(), "err", err)
		nc.ForceReconnect()
	}
}
