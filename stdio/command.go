package stdio

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// process holds what a Conn made by Command needs to end its child.
type process struct {
	cmd     *exec.Cmd
	stdin   *os.File // our end of the child's standard input
	stdout  *os.File // our end of the child's standard output
	grace   time.Duration
	group   bool          // the child leads a process group of its own
	exited  chan struct{} // closed when the child has exited and been reaped
	waitErr error         // cmd.Wait's result, set before exited is closed
}

// exitWait is how long Read, seeing the child's output end, waits for the
// child to exit so that it can report a failed exit as the cause.
const exitWait = time.Second

// reap waits for the child to exit. It runs from Command until the child has
// exited, which Close ensures.
func (p *process) reap() {
	p.waitErr = p.cmd.Wait()
	close(p.exited)
}

// endOfOutput is what Read returns when the child's output ends: io.EOF,
// unless the child exits with a failure soon after, which is then the cause.
func (p *process) endOfOutput() error {
	t := time.NewTimer(exitWait)
	defer t.Stop()
	select {
	case <-p.exited:
		if p.waitErr != nil {
			return p.failure()
		}
	case <-t.C:
	}
	return io.EOF
}

// exitError is how the child ended, once it has exited (GoneErr): its
// failure, or errExited, which a Peer takes for a clean end as it does
// io.EOF at the end of the output.
func (p *process) exitError() error {
	if p.waitErr != nil {
		return p.failure()
	}
	return errExited
}

// failure wraps the child's failed exit.
func (p *process) failure() error {
	return fmt.Errorf("stdio: child process ended: %w", p.waitErr)
}

var errExited = fmt.Errorf("stdio: child process exited with status 0: %w", io.EOF)

// Command starts cmd and returns a Conn that writes messages to its standard
// input and reads them from its standard output.
//
// cmd must not have been started and its Stdin and Stdout must be nil. If
// cmd.Stderr is nil it is set to os.Stderr, so the child's diagnostics stay
// visible; set it to io.Discard or a buffer to change that. A Stderr that is
// not an *os.File is copied by os/exec, whose cmd.Wait then also waits for
// every process holding the child's stderr to close it: that delays Close
// and Gone until they have (set cmd.WaitDelay to bound it).
//
// # The child's exit
//
// Read returns io.EOF when the child closes its standard output, normally by
// exiting; if the child then exits with a failure (a crash, a non-zero
// status) within a second, Read returns an error wrapping its
// *exec.ExitError instead, so that the Peer ends with that cause.
//
// Once the child has exited and been reaped, Gone is closed and GoneErr
// says how it ended: the same error wrapping the *exec.ExitError, or, for
// an exit with status 0, an error wrapping io.EOF (a clean end, for a
// Peer). Read goes on returning what the child wrote before it exited. So
// a Peer that pushes back, and has stopped reading, learns within moments
// that the child died behind its unread output, and a Peer that reads
// loses none of the child's last messages. Gone watches the child itself,
// not what it started.
//
// # Process group
//
// A child is often a launcher (npx, uvx, a shell script) whose own child is
// the real server. On Unix, Command therefore starts the child in a process
// group of its own, which what it starts joins, and Close ends the group,
// not only the child. It sets Setpgid on a copy of cmd.SysProcAttr, keeping
// the caller's other fields; a child given Setsid leads a group of its own
// anyway, and one given Setpgid with a non-zero Pgid joins that group, which
// is not the child's to end: Close then signals the child alone.
//
// A child in its own group no longer receives a terminal's Ctrl-C; it ends
// when its stdin closes or at Close, and if this process dies first it sees
// its stdin end but gets no signal. A process that leaves the group (a
// daemon calling setsid) is beyond Close.
//
// On systems without process groups and signals (Windows and every other
// non-Unix system), Close ends only the child itself, and with no request
// first: after the grace period, it kills it. Processes the child started
// are not ended.
//
// # Close
//
// Close ends the child as the Model Context Protocol's stdio transport asks
// a client to, asking before it forces:
//
//  1. It closes the child's standard input and discards whatever the child
//     still writes, and waits up to Options.GracePeriod (2 s by default) for
//     the child to exit and its group to be empty (on Linux, zombies, dead
//     but not yet reaped by init, do not count).
//  2. Then it sends SIGTERM to the group and waits up to GracePeriod again.
//  3. Then it sends SIGKILL to the group.
//
// In every case it reaps the child before returning, and after SIGKILL it
// waits up to a second more for the group to be gone; so no process of the
// group and no goroutine outlives Close, which returns within about twice
// GracePeriod plus a second. A negative GracePeriod sends SIGKILL at once.
//
// Close returns nil if the child exited with status 0, even if what it left
// in its group had to be signalled, and otherwise an error wrapping its
// *exec.ExitError, which says so if the child itself was sent SIGTERM or had
// to be killed.
func Command(cmd *exec.Cmd, opts ...Options) (*Conn, error) {
	o := oneOf(opts)
	switch {
	case cmd.Process != nil:
		return nil, errors.New("stdio: Command: process already started")
	case cmd.Stdin != nil:
		return nil, errors.New("stdio: Command: Stdin already set")
	case cmd.Stdout != nil:
		return nil, errors.New("stdio: Command: Stdout already set")
	}
	// Our own pipes rather than cmd.StdinPipe and cmd.StdoutPipe: cmd.Wait
	// then neither closes our ends under a running Read nor starts copying
	// goroutines, and Close decides when the ends are closed.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdio: Command: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("stdio: Command: %w", err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	group := ownGroup(cmd)
	err = cmd.Start()
	// The child has its own copies of these ends now; ours must go, or we
	// would never see EOF on the child's output.
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("stdio: Command: %w", err)
	}

	p := &process{cmd: cmd, stdin: inW, stdout: outR, grace: DefaultGracePeriod, group: group, exited: make(chan struct{})}
	if o != nil && o.GracePeriod != 0 {
		p.grace = o.GracePeriod
	}
	go p.reap() // owned by the Conn: Close makes the child exit and waits
	c := newConn(outR, inW, o)
	c.proc = p
	c.closeFn = func() error { return c.closeProcess() }
	return c, nil
}

// ProcessState returns the exit state of the child of a Conn made by
// Command once Close has reaped it, and nil before that or for other Conns.
func (c *Conn) ProcessState() *os.ProcessState {
	if c.proc == nil {
		return nil
	}
	select {
	case <-c.closeDone:
		return c.proc.cmd.ProcessState
	default:
		return nil
	}
}

// Gone returns a channel that is closed once the child of a Conn made by
// Command has exited and been reaped (see Command). It implements jsonrpc.Watcher: a Peer that pushes back, and so
// does not read, learns of the exit this way. For other Conns it returns
// nil, a channel that never fires: they cannot tell that the other side has
// gone until their input ends.
func (c *Conn) Gone() <-chan struct{} {
	if c.proc == nil {
		return nil
	}
	return c.proc.exited
}

// GoneErr returns how the child ended once Gone is closed: an error
// wrapping its *exec.ExitError, or one wrapping io.EOF for status 0. It
// returns nil before, and for a Conn not made by Command.
func (c *Conn) GoneErr() error {
	if c.proc == nil || !c.proc.hasExited() {
		return nil
	}
	return c.proc.exitError()
}
