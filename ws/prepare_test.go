//go:build !js

package ws_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// authServer is a ws.Server behind a sign-in that a restart forgets, as a
// server keeping its sessions in memory does: an upgrade request must
// carry a token of the current generation, else it gets 401.
type authServer struct {
	t      *testing.T
	mu     sync.Mutex
	gen, n int
	tokens map[string]bool
	srv    *ws.Server
}

func newAuthServer(t *testing.T) (*authServer, *http.Client) {
	a := &authServer{t: t}
	a.restart()
	hc := memHTTP(t, a)
	t.Cleanup(func() { a.server().Shutdown(context.Background()) })
	return a, hc
}

// signIn returns a new token of the current generation.
func (a *authServer) signIn() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	tok := fmt.Sprintf("gen%d-token%d", a.gen, a.n)
	a.tokens[tok] = true
	return tok
}

// restart drops every connection and forgets every token.
func (a *authServer) restart() {
	a.mu.Lock()
	old := a.srv
	a.gen++
	a.tokens = make(map[string]bool)
	a.srv = &ws.Server{Peer: jsonrpc.Options{Handler: testMux(a.t)}}
	a.mu.Unlock()
	if old != nil {
		old.Shutdown(context.Background())
	}
}

func (a *authServer) server() *ws.Server {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.srv
}

func (a *authServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	ok := a.tokens[r.Header.Get("Authorization")]
	a.mu.Unlock()
	if !ok {
		http.Error(w, "sign in first", http.StatusUnauthorized)
		return
	}
	a.server().ServeHTTP(w, r)
}

// TestClientPrepareSignsInAgain (issue 31, point 2): a bot whose server
// restarts, forgetting its token, signs in again from Prepare and carries
// on: Prepare runs before every attempt, within DialTimeout, sees why the
// last one failed, and sets the attempt's header. On 3db20dd a Client
// could only send the fixed DialOptions.HTTPHeader, and looped for ever on
// 401.
func TestClientPrepareSignsInAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		auth, hc := newAuthServer(t)
		var (
			token    string
			mu       sync.Mutex
			attempts []string // what each Prepare saw, in order
		)
		c := ws.NewClient("ws://mem/rpc", ws.ClientOptions{
			HTTPClient: hc,
			// Signs in only when it has no token or the last one was refused.
			Prepare: func(ctx context.Context, a *ws.Attempt) error {
				if _, ok := ctx.Deadline(); !ok {
					t.Error("Prepare's ctx has no deadline")
				}
				var se *ws.StatusError
				refused := errors.As(a.Err, &se) && se.Code == http.StatusUnauthorized
				mu.Lock()
				attempts = append(attempts, fmt.Sprintf("failed=%d refused=%v", a.Failed, refused))
				mu.Unlock()
				if token == "" || refused {
					token = auth.signIn()
				}
				a.Header.Set("Authorization", token)
				return nil
			},
		})
		defer c.Close()
		var got []int
		if err := c.Call(t.Context(), "echo", []int{1}, &got); err != nil {
			t.Fatalf("the first call: %v", err)
		}
		auth.restart()
		synctest.Wait()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if err := c.Call(ctx, "echo", []int{2}, &got); err != nil || len(got) != 1 || got[0] != 2 {
			t.Fatalf("the call after the restart: %v, %v: the Client did not sign in again", got, err)
		}
		mu.Lock()
		defer mu.Unlock()
		want := []string{
			"failed=0 refused=false", // the first attempt
			"failed=0 refused=false", // after the restart: the old token
			"failed=1 refused=true",  // refused: signs in again
		}
		if fmt.Sprint(attempts) != fmt.Sprint(want) {
			t.Errorf("Prepare saw %q, want %q", attempts, want)
		}
	})
}

// TestClientPrepareErrorIsFailedAttempt (issue 31, point 2): an error of
// Prepare fails the attempt as a failed handshake does: OnState reports
// it, a call waiting for a connection names it, MaxAttempts counts it; a
// Prepare that hangs ends with DialTimeout. A second 401 in a row, Prepare
// having had its chance, ends the Client.
func TestClientPrepareErrorIsFailedAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, hc := newAuthServer(t)
		errSignIn := errors.New("sign-in server down")
		var log stateLog
		c := ws.NewClient("ws://mem/rpc", ws.ClientOptions{
			HTTPClient: hc,
			OnState:    log.on,
			Prepare:    func(context.Context, *ws.Attempt) error { return errSignIn },
		})
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		err := c.Call(ctx, "echo", nil, nil)
		cancel()
		if !errors.Is(err, errSignIn) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Call = %v, want the ctx's end and Prepare's error", err)
		}
		if s, cause := log.last(); s != ws.Connecting || !errors.Is(cause, errSignIn) {
			t.Errorf("OnState last told (%v, %v), want (connecting, Prepare's error)", s, cause)
		}
		c.Close()

		start := time.Now()
		c = ws.NewClient("ws://mem/rpc", ws.ClientOptions{
			HTTPClient:  hc,
			DialTimeout: 3 * time.Second,
			MaxAttempts: 2,
			Prepare: func(ctx context.Context, _ *ws.Attempt) error {
				<-ctx.Done()
				return ctx.Err()
			},
		})
		<-c.Done()
		if err := c.Err(); !errors.Is(err, ws.ErrGaveUp) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Err() = %v, want ErrGaveUp after two Prepares that ran out of time", err)
		}
		if d := time.Since(start); d < 6*time.Second || d > 7*time.Second {
			t.Errorf("two attempts took %v, want 2 × DialTimeout (3 s) and a backoff", d)
		}

		calls := 0
		c = ws.NewClient("ws://mem/rpc", ws.ClientOptions{
			HTTPClient: hc,
			Prepare: func(_ context.Context, a *ws.Attempt) error {
				calls++
				a.Header.Set("Authorization", "not a token")
				return nil
			},
		})
		<-c.Done()
		var se *ws.StatusError
		if err := c.Err(); !errors.Is(err, ws.ErrGaveUp) || !errors.As(err, &se) || se.Code != http.StatusUnauthorized || calls != 2 {
			t.Errorf("Err() = %v after %d Prepares, want ErrGaveUp and the 401 after 2", err, calls)
		}
	})
}
