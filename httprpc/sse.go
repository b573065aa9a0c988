package httprpc

import (
	"bytes"
	"strconv"
	"time"
)

// appendEvent appends one server-sent event: its id, then data, one data
// line per line of data (a JSON text's line breaks are only whitespace
// between tokens, so a reader that joins the lines with "\n" gets an
// equivalent text). An event with empty data carries only its id: a
// priming event, which readers do not dispatch but whose id they keep, so
// that a stream cut before its first message can be resumed.
func appendEvent(b []byte, id string, data []byte) []byte {
	b = append(append(append(b, "id: "...), id...), '\n')
	for len(data) > 0 {
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			i = len(data)
		}
		if i > 0 {
			b = append(append(append(b, "data: "...), data[:i]...), '\n')
		}
		data = data[min(i+1, len(data)):]
	}
	return append(b, '\n')
}

// appendRetry appends a retry field, alone in an event that carries no
// data: readers take its reconnection delay and dispatch nothing.
func appendRetry(b []byte, d time.Duration) []byte {
	b = append(b, "retry: "...)
	b = strconv.AppendInt(b, d.Milliseconds(), 10)
	return append(b, "\n"...)
}
