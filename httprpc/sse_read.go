package httprpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"
)

// errEventTooLarge is why an event stream was abandoned: an event over the
// reader's bound.
var errEventTooLarge = errors.New("httprpc: event too large")

// maxEventID bounds the event ids a reader keeps (the last one, for a
// resumption, for each stream): a longer id field is ignored, as one
// holding a NUL is. SessionServer's ids are some 20 bytes; the format sets
// no bound, and an id is kept for as long as its stream lives.
const maxEventID = 1024

// sessionEndedEvent is the type of the event a SessionServer sends on a
// stream it ends because the session ended (Shutdown, say): its data says
// why. Other readers do not dispatch an event of a type they do not know;
// Dial's ends its connection at once (ErrSessionExpired) rather than resume
// a stream of a session that is gone.
const sessionEndedEvent = "session-ended"

// sessionEnded is what next returns for a sessionEndedEvent: the server
// ended the session, for reason.
type sessionEnded struct{ reason string }

func (e *sessionEnded) Error() string { return "httprpc: the server ended the session: " + e.reason }

// sseReader reads server-sent events as the WHATWG event-stream format
// defines them, bounded: an event's data and any one line are at most max
// bytes. Lines end with CRLF, LF or a lone CR; a leading byte order mark is
// skipped; fields are data, id, event and retry; lines starting with ':'
// are comments. An event is dispatched only when its data is not empty
// (an event with an id and an empty data line, MCP's priming event, only
// sets the last event id) and its type is "message" or none; an id over
// maxEventID bytes is ignored; an event of type sessionEndedEvent ends the
// stream with a *sessionEnded.
type sseReader struct {
	r      *bufio.Reader
	max    int
	lastID string        // the last event id, as the format defines it
	retry  time.Duration // the reconnection delay the stream asked for; 0 if none
	events int           // events returned by next
	begun  bool          // the byte order mark check is done
	skipLF bool          // the last line ended with CR: a LF right after belongs to it
}

func newSSEReader(r io.Reader, max int) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 4096), max: max}
}

// next returns the data of the next event dispatched, and its id (the
// last id seen, which may come from an earlier event). An id counts only
// once its event is whole: an event cut short leaves lastID as it was, so
// that a resumption gets it again. It returns io.EOF when the stream ends
// between events, io.ErrUnexpectedEOF inside one.
func (s *sseReader) next() (data []byte, id string, err error) {
	var buf []byte
	started, hasData, message, ended := false, false, true, false
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
			if ended && hasData {
				return nil, "", &sessionEnded{reason: string(buf)}
			}
			if hasData && len(buf) > 0 && message {
				s.events++
				return buf, id, nil
			}
			buf, started, hasData, message, ended = buf[:0], false, false, true, false
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
			if len(value) <= maxEventID && bytes.IndexByte(value, 0) < 0 {
				id = string(value)
			}
		case "event":
			message = len(value) == 0 || string(value) == "message"
			ended = string(value) == sessionEndedEvent
		case "retry":
			s.setRetry(value)
		}
	}
}

// setRetry takes a retry field's value: ASCII digits only, milliseconds.
func (s *sseReader) setRetry(v []byte) {
	if len(v) == 0 || len(v) > 9 { // past 9 digits: over 11 days, not a delay to honour
		return
	}
	ms := 0
	for _, c := range v {
		if c < '0' || c > '9' {
			return
		}
		ms = ms*10 + int(c-'0')
	}
	s.retry = time.Duration(ms) * time.Millisecond
}

// line returns the next line without its end; the bytes are valid until
// the next call (they may be the reader's buffer, which Discard leaves in
// place).
func (s *sseReader) line() ([]byte, error) {
	if !s.begun {
		s.begun = true
		// Only a stream that starts with the BOM's first byte is held for
		// the next two.
		if b, _ := s.r.Peek(1); len(b) == 1 && b[0] == 0xef {
			if b, _ := s.r.Peek(3); bytes.Equal(b, []byte("\xef\xbb\xbf")) {
				_, _ = s.r.Discard(3)
			}
		}
	}
	var long []byte
	for {
		if _, err := s.r.Peek(1); err != nil { // fills the buffer, or fails
			if len(long) > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		b, _ := s.r.Peek(s.r.Buffered())
		if s.skipLF {
			s.skipLF = false
			if b[0] == '\n' {
				_, _ = s.r.Discard(1)
				continue
			}
		}
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			if len(long)+len(b) > s.max+2 {
				return nil, fmt.Errorf("%w: a line over %d bytes", errEventTooLarge, s.max)
			}
			long = append(long, b...)
			_, _ = s.r.Discard(len(b))
			continue
		}
		s.skipLF = b[i] == '\r'
		line := b[:i]
		if long != nil {
			line = append(long, line...)
			if len(line) > s.max+2 {
				return nil, fmt.Errorf("%w: a line over %d bytes", errEventTooLarge, s.max)
			}
		}
		_, _ = s.r.Discard(i + 1)
		return line, nil
	}
}
