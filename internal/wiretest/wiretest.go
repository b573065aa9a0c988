// Package wiretest holds what the fuzz targets of several packages use to
// judge a Peer's replies against the raw input that caused them.
package wiretest

import "encoding/json"

// InputIDs counts the raw ids of the objects at the top level of data or
// in its top-level array: a reply may carry each at most that often.
func InputIDs(data []byte) map[string]int {
	ids := make(map[string]int)
	var elems []json.RawMessage
	if json.Unmarshal(data, &elems) != nil {
		elems = []json.RawMessage{data}
	}
	for _, el := range elems {
		var obj map[string]json.RawMessage
		if json.Unmarshal(el, &obj) == nil {
			if id, ok := obj["id"]; ok {
				ids[string(id)]++
			}
		}
	}
	return ids
}
