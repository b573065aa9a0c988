package jsonrpc

// Reply arrays within the Conn's limit. JSON-RPC 2.0 §6 answers a batch
// with one array, and §5 answers every call. When the array of a batch's
// replies is longer than the Conn carries (see Limiter), the two cannot
// both hold, and the remote side would skip the one array, answering none
// of its calls. So the replies go in as few arrays as fit, in order, each
// within the limit: a receiver matching replies by id, as the
// specification requires of batches (and this package's Batch does),
// takes them from several arrays alike. A single element's reply longer
// than the limit becomes an Internal error, as a reply to a call sent
// alone does.

// replyArrays joins elems, the encoded replies of a batch's elements in
// order (nil for an element that has none), into arrays of at most the
// Conn's limit each; ids are the elements' ids, for the Internal errors
// that replace replies too long. It returns nil when no element has a
// reply.
func (p *Peer) replyArrays(elems [][]byte, ids []ID) []*msgBuf {
	total := 0
	for _, e := range elems {
		if e != nil {
			total += len(e) + 1
		}
	}
	if total == 0 { // an all-notification batch gets no reply at all
		return nil
	}
	limit := p.maxMsg
	if limit <= 0 || total+1 <= limit {
		out := newMsgBuf()
		out.b = appendArray(out.b, elems)
		return []*msgBuf{out}
	}
	p.log.Info("jsonrpc: a batch's reply is longer than the connection carries; sending it in several arrays",
		"bytes", total+1, "limit", limit)
	var arrays []*msgBuf
	var cur *msgBuf
	for i, e := range elems {
		if e == nil {
			continue
		}
		if len(e)+2 > limit {
			p.log.Error("jsonrpc: a batch element's reply is longer than the connection carries; sending an Internal error instead",
				"bytes", len(e), "limit", limit)
			e = p.tooLargeError(nil, ids[i], limit-2)
		}
		if cur != nil && len(cur.b)+1+len(e)+1 > limit {
			cur.b = append(cur.b, ']')
			arrays, cur = append(arrays, cur), nil
		}
		if cur == nil {
			cur = newMsgBuf()
			cur.b = append(cur.b, '[')
		} else {
			cur.b = append(cur.b, ',')
		}
		cur.b = append(cur.b, e...)
	}
	cur.b = append(cur.b, ']')
	return append(arrays, cur)
}

// appendArray appends the JSON array of the non-nil elems to b.
func appendArray(b []byte, elems [][]byte) []byte {
	b = append(b, '[')
	first := true
	for _, e := range elems {
		if e == nil {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		b, first = append(b, e...), false
	}
	return append(b, ']')
}

// tooLargeError appends the Internal error reply that replaces a reply to
// id longer than the Conn carries, within room bytes: with id null when
// the id itself leaves no room (an id may be nearly as long as the limit,
// and the error is longer than the request that carried it).
func (p *Peer) tooLargeError(b []byte, id ID, room int) []byte {
	e := errInternal()
	e.Data = appendQuote(nil, "reply too large")
	n := len(b)
	if b = appendErrorResponse(b, id, e); len(b)-n > room && !id.IsNull() {
		p.log.Error("jsonrpc: an id too long to answer within the connection's limit; answering with id null", "bytes", len(id.raw))
		b = appendErrorResponse(b[:n], NullID(), e)
	}
	return b
}

// fits returns reply, the encoded error e for id, or the same with id null
// when reply is longer than the Conn carries: the id alone leaves no room.
func (p *Peer) fits(reply []byte, id ID, e *Error) []byte {
	if p.maxMsg <= 0 || len(reply) <= p.maxMsg {
		return reply
	}
	p.log.Error("jsonrpc: an id too long to answer within the connection's limit; answering with id null", "bytes", len(id.raw))
	return appendErrorResponse(nil, NullID(), e)
}
