package stdio

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestZombieGroupIsNotAlive: a group left with zombies only is dead, so
// Close neither waits for it nor signals it, however slowly init reaps
// orphans (in some containers, never). Here the zombie is the test's own
// child, not yet reaped.
func TestZombieGroupIsNotAlive(t *testing.T) {
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Skip("cannot run true:", err)
	}
	defer cmd.Wait()
	p := &process{cmd: cmd, group: true}
	pid := cmd.Process.Pid
	for deadline := time.Now().Add(5 * time.Second); !zombie(pid); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the child did not become a zombie within 5 s")
		}
	}
	if !p.groupExists() {
		t.Error("groupExists = false for a group with a zombie in it")
	}
	if p.groupAlive() {
		t.Error("groupAlive = true for a group of zombies only")
	}
}

// zombie reports whether process pid is a zombie.
func zombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := bytes.LastIndexByte(stat, ')')
	return err == nil && i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}
