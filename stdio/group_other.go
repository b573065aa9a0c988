//go:build !unix

package stdio

import "os/exec"

// hasTerm reports whether the platform can ask a process to end before it
// kills it: not here.
const hasTerm = false

// ownGroup would put the child in a process group of its own; here there is
// none that can be signalled, so only the child itself is ever ended.
func ownGroup(*exec.Cmd) bool { return false }

// terminate is never called here (hasTerm is false).
func (p *process) terminate() {}

// kill ends the child (not what it started).
func (p *process) kill() { p.cmd.Process.Kill() }

// groupExists reports false: the child leads no group.
func (p *process) groupExists() bool { return false }

// groupAlive reports false: the child leads no group.
func (p *process) groupAlive() bool { return false }
