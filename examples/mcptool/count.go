package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/peerwire/jsonrpc/schema"
)

// count is a tool argument that is a whole number. JSON Schema's
// "integer" takes 50.0 and 5e1 (a number whose fraction is zero), which
// encoding/json refuses for an int; a client that checked its arguments
// against inputSchema (Python's json writes 50.0 for a float) must not get
// Invalid params for them, so count takes every form the schema takes
// (TestReviewInputSchemaTakesWhatArgsRefuses).
type count int

// UnmarshalJSON reads a whole number in any JSON form (50, 50.0, 5e1);
// null leaves c as it is, as encoding/json does.
func (c *count) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	if i, err := strconv.ParseInt(n.String(), 10, 0); err == nil {
		*c = count(i)
		return nil
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return fmt.Errorf("%s is not a whole number from -2^53 to 2^53", n)
	}
	*c = count(f)
	return nil
}

// JSONSchema says a count is an integer within the bounds UnmarshalJSON
// takes every form of one in (a float64's exact integers).
func (count) JSONSchema() schema.Schema {
	return schema.Schema{"type": "integer", "minimum": -1 << 53, "maximum": 1 << 53}
}
