package httprpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
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

// errEventTooLarge is why an event stream was abandoned: an event over the
// reader's bound.
var errEventTooLarge = errors.New("httprpc: event too large")

// sseReader reads server-sent events (the WHATWG event-stream format: lines
// ended by LF or CRLF, fields data, id, event and retry, comments starting
// with ':'), bounded: an event's data and any one line are at most max
// bytes. A lone CR does not end a line.
type sseReader struct {
	r      *bufio.Reader
	max    int
	lastID string // the last id field seen, as the format defines it
	events int    // events returned by next
}

func newSSEReader(r io.Reader, max int) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 4096), max: max}
}

// next returns the data of the next event that has any, and its id (the
// last id seen, which may come from an earlier event). An id counts only
// once its event is whole: an event cut short leaves lastID as it was, so
// that a resumption gets it again. It returns io.EOF when the stream ends
// between events, io.ErrUnexpectedEOF inside one.
func (s *sseReader) next() (data []byte, id string, err error) {
	var buf []byte
	started, hasData := false, false
	id = s.lastID // the id buffer; it becomes the last id once the event is whole
	for {
		line, err := s.line()
		if err != nil {
			if err == io.EOF && started {
				err = io.ErrUnexpectedEOF
			}
			return nil, "", err
		}
		if len(line) == 0 { // dispatch
			s.lastID = id
			if hasData {
				s.events++
				return buf, id, nil
			}
			started = false
			continue
		}
		started = true
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "":
			// a comment
		case "data":
			if len(buf)+len(value)+1 > s.max {
				return nil, "", fmt.Errorf("%w: over %d bytes", errEventTooLarge, s.max)
			}
			if hasData {
				buf = append(buf, '\n')
			}
			buf = append(buf, value...)
			hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				id = string(value)
			}
		}
	}
}

// line returns the next line without its end; the bytes are valid until
// the next call.
func (s *sseReader) line() ([]byte, error) {
	var long []byte
	for {
		frag, err := s.r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if len(long)+len(frag) > s.max+2 {
				return nil, fmt.Errorf("%w: a line over %d bytes", errEventTooLarge, s.max)
			}
			long = append(long, frag...)
			continue
		}
		if err != nil {
			if len(frag) > 0 || len(long) > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if long != nil {
			frag = append(long, frag...)
			if len(frag) > s.max+2 {
				return nil, fmt.Errorf("%w: a line over %d bytes", errEventTooLarge, s.max)
			}
		}
		frag = frag[:len(frag)-1]
		if len(frag) > 0 && frag[len(frag)-1] == '\r' {
			frag = frag[:len(frag)-1]
		}
		return frag, nil
	}
}
