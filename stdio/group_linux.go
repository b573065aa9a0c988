package stdio

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// liveMember reports whether a process of group pgid is left that is not a
// zombie, from /proc; true when /proc cannot tell.
func liveMember(pgid int) bool {
	d, err := os.Open("/proc")
	if err != nil {
		return true
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return true
	}
	want := []byte(strconv.Itoa(pgid))
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%s/stat", name))
		if err != nil {
			continue // gone since the listing
		}
		// "pid (comm) state ppid pgrp ...": comm may hold anything but
		// ends at the last parenthesis.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) >= 3 && bytes.Equal(f[2], want) && f[0][0] != 'Z' && f[0][0] != 'X' {
			return true
		}
	}
	return false
}
