package httprpc

import (
	"net/http"
	"strconv"
	"strings"
)

// acceptQ returns the weight that r's Accept header gives mediaType (a
// lower-case type/subtype without parameters) as RFC 9110 (section
// 12.5.1) reads it: that of the most specific media range matching it
// (the type itself, over type/*, over */*), whatever the order and the
// weights of the others, so that "application/json;q=0, */*" refuses JSON
// and "*/*, text/event-stream;q=0" an event stream. exact reports whether
// that range names the type itself. A request without Accept takes every
// type (weight 1, not exact); a type no range matches gets 0. Parameters
// other than q are ignored.
func acceptQ(r *http.Request, mediaType string) (q float64, exact bool) {
	values := r.Header.Values("Accept")
	if len(values) == 0 {
		return 1, false
	}
	major, _, _ := strings.Cut(mediaType, "/")
	best := 0 // the specificity of the ranges seen so far: 3 the type, 2 type/*, 1 */*
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			name, params, _ := strings.Cut(part, ";")
			var rank int
			switch strings.ToLower(strings.TrimSpace(name)) {
			case mediaType:
				rank = 3
			case major + "/*":
				rank = 2
			case "*/*":
				rank = 1
			default:
				continue
			}
			w := weight(params)
			switch {
			case rank > best:
				best, q = rank, w
			case rank == best:
				q = max(q, w) // the same range twice: the kinder weight
			}
		}
	}
	return q, best == 3
}

// weight is the q parameter among an Accept element's parameters: 1 if
// none, 0 if malformed.
func weight(params string) float64 {
	for p := range strings.SplitSeq(params, ";") {
		k, v, _ := strings.Cut(p, "=")
		if strings.EqualFold(strings.TrimSpace(k), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || q < 0 || q > 1 {
				return 0
			}
			return q
		}
	}
	return 1
}
