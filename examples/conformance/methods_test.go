package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestSubtract(t *testing.T) {
	eachFraming(t, func(t *testing.T, c *child) {
		for _, tc := range []struct{ params, want string }{
			{`[42, 23]`, `19`},
			{`{"minuend": 42, "subtrahend": 23}`, `19`},
			{`[-5, 10]`, `-15`},
			{`[1.5, 0.25]`, `1.25`},
			{`[3, 0.5]`, `2.5`},
			{`[1e2, 1]`, `99`},
			{`[12345678901234567890, 1]`, `12345678901234567889`},
			{`[-12345678901234567890, 12345678901234567890]`, `-24691357802469135780`},
		} {
			c.run(t, tc.params, func(t *testing.T) {
				m := c.callMsg(`{"jsonrpc":"2.0","id":1,"method":"subtract","params":` + tc.params + `}`)
				wantResult(t, m, "1", tc.want)
				if string(m.Result) != tc.want { // integers stay integers, exactly
					t.Errorf("result text = %s, want %s", m.Result, tc.want)
				}
			})
		}
		for _, params := range []string{
			`absent`, `[]`, `[42]`, `[42, 23, 1]`, `{}`, `{"minuend": 42}`, `{"subtrahend": 23}`,
			`["42", 23]`, `[42, null]`, `[true, 1]`, `{"minuend": "42", "subtrahend": 23}`,
			`[[1], 2]`, `[1e400, 1]`, `[1.7976931348623157e308, -1.7976931348623157e308]`,
		} {
			c.run(t, "invalid "+params, func(t *testing.T) {
				msg := `{"jsonrpc":"2.0","id":2,"method":"subtract","params":` + params + `}`
				if params == "absent" {
					msg = `{"jsonrpc":"2.0","id":2,"method":"subtract"}`
				}
				wantError(t, c.callMsg(msg), "2", -32602)
			})
		}
	})
}

func TestSum(t *testing.T) {
	eachFraming(t, func(t *testing.T, c *child) {
		for _, tc := range []struct{ params, want string }{
			{`[1, 2, 4]`, `7`},
			{`[]`, `0`},
			{`[0.5, 0.25]`, `0.75`},
			{`[1, 0.5, -2]`, `-0.5`},
			{`[12345678901234567890, 12345678901234567890]`, `24691357802469135780`},
		} {
			c.run(t, tc.params, func(t *testing.T) {
				m := c.callMsg(`{"jsonrpc":"2.0","id":1,"method":"sum","params":` + tc.params + `}`)
				wantResult(t, m, "1", tc.want)
				if string(m.Result) != tc.want {
					t.Errorf("result text = %s, want %s", m.Result, tc.want)
				}
			})
		}
		for _, params := range []string{`absent`, `{"a": 1}`, `[1, "2"]`, `[1, null]`, `[{}]`} {
			c.run(t, "invalid "+params, func(t *testing.T) {
				msg := `{"jsonrpc":"2.0","id":2,"method":"sum","params":` + params + `}`
				if params == "absent" {
					msg = `{"jsonrpc":"2.0","id":2,"method":"sum"}`
				}
				wantError(t, c.callMsg(msg), "2", -32602)
			})
		}
	})
}

func TestGetDataAndNotifications(t *testing.T) {
	eachFraming(t, func(t *testing.T, c *child) {
		wantResult(t, c.callMsg(`{"jsonrpc":"2.0","id":1,"method":"get_data"}`), "1", `["hello",5]`)
		for _, method := range []string{"update", "notify_hello", "notify_sum"} {
			wantResult(t, c.callMsg(`{"jsonrpc":"2.0","id":2,"method":"`+method+`","params":[1]}`), "2", `null`)
			wantResult(t, c.callMsg(`{"jsonrpc":"2.0","id":3,"method":"`+method+`"}`), "3", `null`)
			c.send(`{"jsonrpc":"2.0","method":"` + method + `","params":{"x":1}}`)
			c.noReply()
		}
		for _, method := range []string{"foobar", "Subtract", "rpc.discover", "", "$/cancelRequest"} {
			wantError(t, c.callMsg(`{"jsonrpc":"2.0","id":4,"method":"`+method+`"}`), "4", -32601)
		}
	})
}

func TestEcho(t *testing.T) {
	eachFraming(t, func(t *testing.T, c *child) {
		for _, params := range []string{
			`{"a":[1,2.50,-0,1e+30,12345678901234567890],"s":"\u00e9\"x\\\/","n":null,"t":true,"o":{}}`,
			`[1,"two",{"three":[3]},[],false]`,
			`[]`,
			`{}`,
		} {
			c.run(t, params, func(t *testing.T) {
				m := c.callMsg(`{"jsonrpc":"2.0","id":1,"method":"echo","params":` + params + `}`)
				wantResult(t, m, "1", params)
				if string(m.Result) != params {
					t.Errorf("not byte for byte:\ngot  %s\nwant %s", m.Result, params)
				}
			})
		}
		c.run(t, "absent", func(t *testing.T) {
			wantResult(t, c.callMsg(`{"jsonrpc":"2.0","id":1,"method":"echo"}`), "1", `null`)
		})
		// Whitespace and HTML-special characters must come back as sent too.
		c.run(t, "spaces and html", func(t *testing.T) {
			params := `{ "a" : [ 1 , 2 ] , "h" : "<&>" }`
			m := c.callMsg(`{"jsonrpc":"2.0","id":1,"method":"echo","params":` + params + `}`)
			wantResult(t, m, "1", params)
			if got := string(m.Result); got != params {
				t.Errorf("not byte for byte:\ngot  %s\nwant %s", got, params)
			}
		})
	})
}

func TestFail(t *testing.T) {
	eachFraming(t, func(t *testing.T, c *child) {
		for _, params := range []string{`{"why":["x",1.50,null]}`, `[1,2]`, `{ "spaced" : true }`} {
			c.run(t, params, func(t *testing.T) {
				e := wantError(t, c.callMsg(`{"jsonrpc":"2.0","id":"f","method":"fail","params":`+params+`}`), `"f"`, -32001)
				if e.Message != "fail" || string(e.Data) != params {
					t.Errorf("error = %s %s, want fail %s", e.Message, e.Data, params)
				}
			})
		}
		c.run(t, "absent", func(t *testing.T) {
			e := wantError(t, c.callMsg(`{"jsonrpc":"2.0","id":"f","method":"fail"}`), `"f"`, -32001)
			if e.Message != "fail" || e.Data != nil {
				t.Errorf("error = %s %s, want fail with no data", e.Message, e.Data)
			}
		})
	})
}

func TestPanic(t *testing.T) {
	eachFraming(t, func(t *testing.T, c *child) {
		e := wantError(t, c.callMsg(`{"jsonrpc":"2.0","id":1,"method":"panic","params":[]}`), "1", -32603)
		if e.Message != "Internal error" {
			t.Errorf("message = %q", e.Message)
		}
		c.send(`{"jsonrpc":"2.0","method":"panic"}`) // a panicking notification
		c.noReply()
		wantResult(t, c.callMsg(`{"jsonrpc":"2.0","id":2,"method":"subtract","params":[42,23]}`), "2", `19`)
	})
}

func TestSleepAndCancel(t *testing.T) {
	eachFraming(t, func(t *testing.T, c *child) {
		c.run(t, "sleep", func(t *testing.T) {
			wantResult(t, c.callMsg(`{"jsonrpc":"2.0","id":1,"method":"sleep","params":{"ms":20}}`), "1", `20`)
		})
		c.run(t, "cancel", func(t *testing.T) {
			c.send(`{"jsonrpc":"2.0","id":"s1","method":"sleep","params":{"ms":60000}}`)
			c.noReply() // the sleep is running
			begin := time.Now()
			c.send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"s1"}}`)
			e := wantError(t, decode(t, c.recv()), `"s1"`, -32800)
			if e.Message != "Request cancelled" {
				t.Errorf("message = %q", e.Message)
			}
			if d := time.Since(begin); d > 2*time.Second {
				t.Errorf("cancelled after %v", d)
			}
			// Cancelling an unknown or finished id sends nothing.
			c.send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"none"}}`)
			c.send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"s1"}}`)
			c.noReply()
		})
		c.run(t, "cancel numeric id", func(t *testing.T) {
			c.send(`{"jsonrpc":"2.0","id":77,"method":"sleep","params":[60000]}`)
			c.send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":77}}`)
			wantError(t, decode(t, c.recv()), `77`, -32800)
		})
		for _, params := range []string{`absent`, `{}`, `{"ms":"10"}`, `{"ms":-1}`, `{"ms":1.5}`, `{"ms":3600001}`} {
			c.run(t, "invalid "+params, func(t *testing.T) {
				msg := `{"jsonrpc":"2.0","id":3,"method":"sleep","params":` + params + `}`
				if params == "absent" {
					msg = `{"jsonrpc":"2.0","id":3,"method":"sleep"}`
				}
				wantError(t, c.callMsg(msg), "3", -32602)
			})
		}
	})
}

func TestCallback(t *testing.T) {
	eachFraming(t, func(t *testing.T, c *child) {
		// serverCall reads the server's call and checks its method and params
		// (absent when params is "").
		serverCall := func(t *testing.T, method, params string) wireMsg {
			t.Helper()
			m := decode(t, c.recv())
			if m.Method != method || m.ID == nil || string(m.ID) == "null" {
				t.Fatalf("want a call of %s, got %+v", method, m)
			}
			switch {
			case params == "" && m.Params != nil:
				t.Errorf("params = %s, want none", m.Params)
			case params != "" && canon(t, string(m.Params)) != canon(t, params):
				t.Errorf("params = %s, want %s", m.Params, params)
			}
			return m
		}
		c.run(t, "result", func(t *testing.T) {
			c.send(`{"jsonrpc":"2.0","id":"cb","method":"callback","params":{"method":"client/answer","params":{"q":[1,"two"]}}}`)
			m := serverCall(t, "client/answer", `{"q":[1,"two"]}`)
			c.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"got":{"q":[1,"two"]}}}`)
			wantResult(t, decode(t, c.recv()), `"cb"`, `{"got":{"q":[1,"two"]}}`)
		})
		c.run(t, "positional params", func(t *testing.T) {
			c.send(`{"jsonrpc":"2.0","id":"cb","method":"callback","params":["client/add",[1,2]]}`)
			m := serverCall(t, "client/add", `[1,2]`)
			c.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":3}`)
			wantResult(t, decode(t, c.recv()), `"cb"`, `3`)
		})
		c.run(t, "no params", func(t *testing.T) {
			c.send(`{"jsonrpc":"2.0","id":"cb","method":"callback","params":{"method":"client/ping"}}`)
			m := serverCall(t, "client/ping", "")
			c.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":null}`)
			wantResult(t, decode(t, c.recv()), `"cb"`, `null`)
		})
		c.run(t, "error", func(t *testing.T) {
			c.send(`{"jsonrpc":"2.0","id":"cb","method":"callback","params":{"method":"client/refuse","params":{}}}`)
			m := serverCall(t, "client/refuse", `{}`)
			c.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32050,"message":"refused","data":{"why":[1]}}}`)
			e := wantError(t, decode(t, c.recv()), `"cb"`, -32050)
			if e.Message != "refused" || string(e.Data) != `{"why":[1]}` {
				t.Errorf("error = %s %s, want the client's as is", e.Message, e.Data)
			}
		})
		c.run(t, "cancelled while waiting", func(t *testing.T) {
			c.send(`{"jsonrpc":"2.0","id":"cb","method":"callback","params":{"method":"client/slow"}}`)
			m := serverCall(t, "client/slow", "")
			c.send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"cb"}}`)
			// The server's Call gives up and tells us so; then the reply.
			cancel := decode(t, c.recv())
			if cancel.Method != "$/cancelRequest" || cancel.ID != nil || canon(t, string(cancel.Params)) != canon(t, `{"id":`+string(m.ID)+`}`) {
				t.Errorf("want $/cancelRequest for %s, got %+v", m.ID, cancel)
			}
			wantError(t, decode(t, c.recv()), `"cb"`, -32800)
		})
		for _, params := range []string{`absent`, `{}`, `{"method":""}`, `{"method":1}`, `{"method":"m","params":5}`} {
			c.run(t, "invalid "+params, func(t *testing.T) {
				msg := `{"jsonrpc":"2.0","id":3,"method":"callback","params":` + params + `}`
				if params == "absent" {
					msg = `{"jsonrpc":"2.0","id":3,"method":"callback"}`
				}
				wantError(t, c.callMsg(msg), "3", -32602)
			})
		}
	})
}

func TestNotifyMe(t *testing.T) {
	eachFraming(t, func(t *testing.T, c *child) {
		c.run(t, "five", func(t *testing.T) {
			c.send(`{"jsonrpc":"2.0","id":"n","method":"notify_me","params":{"method":"tick","count":5}}`)
			for i := range 5 {
				m := decode(t, c.recv())
				if m.Method != "tick" || m.ID != nil || canon(t, string(m.Params)) != fmt.Sprintf(`{"seq":%d}`, i) {
					t.Fatalf("message %d: want tick {\"seq\":%d}, got %+v (params %s)", i, i, m, m.Params)
				}
			}
			wantResult(t, decode(t, c.recv()), `"n"`, `5`)
		})
		c.run(t, "many", func(t *testing.T) {
			const n = 2000
			c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"n","method":"notify_me","params":{"method":"tock","count":%d}}`, n))
			for i := range n {
				m := decode(t, c.recv())
				var p struct{ Seq int }
				if err := json.Unmarshal(m.Params, &p); err != nil || m.Method != "tock" || p.Seq != i {
					t.Fatalf("message %d: got %+v (params %s)", i, m, m.Params)
				}
			}
			wantResult(t, decode(t, c.recv()), `"n"`, fmt.Sprint(n))
		})
		c.run(t, "zero", func(t *testing.T) {
			wantResult(t, c.callMsg(`{"jsonrpc":"2.0","id":1,"method":"notify_me","params":{"method":"tick","count":0}}`), "1", `0`)
		})
		c.run(t, "as a notification", func(t *testing.T) {
			c.send(`{"jsonrpc":"2.0","method":"notify_me","params":{"method":"tick","count":2}}`)
			for i := range 2 {
				m := decode(t, c.recv())
				if m.Method != "tick" || canon(t, string(m.Params)) != fmt.Sprintf(`{"seq":%d}`, i) {
					t.Fatalf("message %d: got %+v", i, m)
				}
			}
			c.noReply()
		})
		for _, params := range []string{`absent`, `{"method":"tick"}`, `{"count":1}`, `{"method":"tick","count":-1}`,
			`{"method":"tick","count":100001}`, `{"method":"tick","count":"3"}`} {
			c.run(t, "invalid "+params, func(t *testing.T) {
				msg := `{"jsonrpc":"2.0","id":3,"method":"notify_me","params":` + params + `}`
				if params == "absent" {
					msg = `{"jsonrpc":"2.0","id":3,"method":"notify_me"}`
				}
				wantError(t, c.callMsg(msg), "3", -32602)
			})
		}
	})
}

// TestIDs checks that ids come back byte for byte, on results and errors.
func TestIDs(t *testing.T) {
	eachFraming(t, func(t *testing.T, c *child) {
		for _, id := range []string{
			`12345678901234567890`, `-98765432109876543210987654321`, `1.50`, `1e2`, `0`,
			`"x"`, `""`, `"\u00e9\n\"id\""`, `"12345678901234567890"`,
		} {
			c.run(t, id, func(t *testing.T) {
				m := c.callMsg(`{"jsonrpc":"2.0","id":` + id + `,"method":"subtract","params":[42,23]}`)
				wantResult(t, m, id, `19`)
				m = c.callMsg(`{"jsonrpc":"2.0","id":` + id + `,"method":"foobar"}`)
				wantError(t, m, id, -32601)
				m = c.callMsg(`{"jsonrpc":"2.0","id":` + id + `,"method":"subtract","params":[1]}`)
				wantError(t, m, id, -32602)
				got := c.recvBatch(`[{"jsonrpc":"2.0","id":` + id + `,"method":"get_data"}]`)
				if len(got) != 1 || string(got[0].ID) != id {
					t.Errorf("batch reply %+v, want id %s", got, id)
				}
			})
		}
		c.run(t, "null", func(t *testing.T) {
			// A null id is a call, not a notification (the spec discourages it).
			wantResult(t, c.callMsg(`{"jsonrpc":"2.0","id":null,"method":"subtract","params":[42,23]}`), "null", `19`)
		})
	})
}

// recvBatch sends a batch and returns its decoded reply.
func (c *child) recvBatch(batch string) []wireMsg {
	c.t.Helper()
	got := c.call(batch)
	if !strings.HasPrefix(got, "[") {
		c.t.Fatalf("want a batch reply, got %s", got)
	}
	var out []wireMsg
	if err := json.Unmarshal([]byte(got), &out); err != nil {
		c.t.Fatalf("bad batch reply %s: %v", got, err)
	}
	return out
}

// TestConcurrentCalls checks that replies are matched by id when calls run
// concurrently: a long sleep does not hold up a later call.
func TestConcurrentCalls(t *testing.T) {
	eachFraming(t, func(t *testing.T, c *child) {
		c.send(`{"jsonrpc":"2.0","id":"slow","method":"sleep","params":{"ms":300}}`)
		c.send(`{"jsonrpc":"2.0","id":"fast","method":"subtract","params":[2,1]}`)
		wantResult(t, decode(t, c.recv()), `"fast"`, `1`)
		wantResult(t, decode(t, c.recv()), `"slow"`, `300`)
	})
}
