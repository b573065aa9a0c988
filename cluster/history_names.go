package cluster

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// How a topic's name becomes its stream's name and subject. JetStream
// takes in a stream name no '.', '*', '>', whitespace, '/' or '\' (a
// stream is a directory), and at most 255 characters; a subject token no
// '.', '*', '>' or whitespace.

// metaTopic is the stream metadata key that holds the topic's name.
const metaTopic = "jsonrpc.topic"

// maxStreamName is JetStream's bound on a stream's name.
const maxStreamName = 255

// hashedMark starts the token of a name too long to spell out: no token
// holds it, since token escapes '%' as %25 and 'H' is no hex digit.
const hashedMark = "%H"

// token returns the stream name's and subject's token of the topic name:
// the name as a subject token (token: distinct names, distinct tokens),
// with '/' and '\' escaped too; or hashedMark and the name's SHA-256 in
// base 32 when the stream name would be longer than JetStream takes.
func (s *HistoryStore) token(name string) string {
	tok := token(name)
	if strings.ContainsAny(tok, `/\`) {
		tok = strings.NewReplacer("/", "%2F", `\`, "%5C").Replace(tok)
	}
	if len(s.stream)+len(tok) <= maxStreamName {
		return tok
	}
	sum := sha256.Sum256([]byte(name))
	return hashedMark + base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:])
}

// owns returns an error if the stream info describes is another topic's:
// two names whose SHA-256 agree, which would mix their histories.
func (s *HistoryStore) owns(info *jetstream.StreamInfo, name string) error {
	if got, ok := info.Config.Metadata[metaTopic]; ok && got != name {
		return fmt.Errorf("cluster: topic %.40q: its stream %s holds topic %.40q (their names' SHA-256 agree): refusing to mix them", name, info.Config.Name, got)
	}
	return nil
}
