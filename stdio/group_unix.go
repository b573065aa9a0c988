//go:build unix

package stdio

import (
	"os/exec"
	"syscall"
)

// hasTerm reports whether the platform can ask a process to end (SIGTERM)
// before it kills it.
const hasTerm = true

// ownGroup arranges for cmd to start in a process group of its own, led by
// the child, so that what the child starts (a launcher's real server) can
// be signalled with it. It sets Setpgid on a copy of cmd.SysProcAttr, whose
// other fields it keeps, and reports whether the child will lead its group:
// it also does when the caller set Setsid (a new session is a new group,
// and Setpgid would then fail), and it does not when the caller set Setpgid
// with a Pgid, to join a group that is not the child's.
func ownGroup(cmd *exec.Cmd) bool {
	var attr syscall.SysProcAttr
	if cmd.SysProcAttr != nil {
		attr = *cmd.SysProcAttr
	}
	switch {
	case attr.Setsid:
	case attr.Setpgid && attr.Pgid != 0:
		return false
	default:
		attr.Setpgid, attr.Pgid = true, 0
	}
	cmd.SysProcAttr = &attr
	return true
}

// signal sends sig to the child's process group if it leads one, else to
// the child alone. Once the group is empty it has no effect.
func (p *process) signal(sig syscall.Signal) {
	if p.group {
		syscall.Kill(-p.cmd.Process.Pid, sig)
		return
	}
	p.cmd.Process.Signal(sig) // an error means it has been reaped
}

// terminate asks the child's group to end.
func (p *process) terminate() { p.signal(syscall.SIGTERM) }

// kill ends the child's group.
func (p *process) kill() { p.signal(syscall.SIGKILL) }

// groupExists reports whether a process of the child's group is left, a
// zombie included (the child itself, until it is reaped; an orphan, until
// init reaps it); false if the child leads no group. It is cheap.
func (p *process) groupExists() bool {
	return p.group && syscall.Kill(-p.cmd.Process.Pid, 0) == nil
}

// groupAlive reports whether a process of the child's group is left that is
// not a zombie, where the system tells (Linux, through /proc), else as
// groupExists does. It may read a file per process of the system.
func (p *process) groupAlive() bool {
	return p.groupExists() && liveMember(p.cmd.Process.Pid)
}
