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
			return fmt.Errorf("stdio: child process ended: %w", p.waitErr)
		}
	case <-t.C:
	}
	return io.EOF
}

// Command starts cmd and returns a Conn that writes messages to its standard
// input and reads them from its standard output.
//
// cmd must not have been started and its Stdin and Stdout must be nil. If
// cmd.Stderr is nil it is set to os.Stderr, so the child's diagnostics stay
// visible; set it to io.Discard or a buffer to change that.
//
// Read returns io.EOF when the child closes its standard output, normally by
// exiting; if the child then exits with a failure (a crash, a non-zero
// status) within a second, Read returns an error wrapping its
// *exec.ExitError instead, so that the Peer ends with that cause. Close ends the child gracefully: it closes the child's standard
// input, discards whatever the child still writes, waits up to
// Options.GracePeriod for it to exit, then kills it; in every case it reaps
// the child before returning, so no process or goroutine outlives Close.
// Close returns nil if the child exited with status 0 and otherwise an error
// wrapping its *exec.ExitError, which says so if the child had to be killed.
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

	p := &process{cmd: cmd, stdin: inW, stdout: outR, grace: DefaultGracePeriod, exited: make(chan struct{})}
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

// closeProcess ends the child as Command describes.
func (c *Conn) closeProcess() error {
	p := c.proc
	p.stdin.Close() // the child reads EOF

	// Interrupt a pending Read without closing the pipe, and wait until
	// Read has let go of it, so that what the child still writes can be
	// drained: closing our end now could kill the child with SIGPIPE.
	drain := true
	if err := p.stdout.SetReadDeadline(time.Now()); err != nil {
		// No deadlines on this platform's pipes: close instead.
		p.stdout.Close()
		drain = false
	} else {
		c.rmu.Lock()
		defer c.rmu.Unlock()
		drain = p.stdout.SetReadDeadline(time.Time{}) == nil
	}
	drained := make(chan struct{})
	if drain {
		go func() {
			defer close(drained)
			io.Copy(io.Discard, p.stdout)
		}()
	} else {
		close(drained)
	}

	killed := false
	if p.grace < 0 {
		p.cmd.Process.Kill()
		killed = true
	} else {
		timer := time.NewTimer(p.grace)
		select {
		case <-p.exited:
		case <-timer.C:
			p.cmd.Process.Kill()
			killed = true
		}
		timer.Stop()
	}
	<-p.exited
	err := p.waitErr
	p.stdout.Close() // ends the drain, even if a grandchild holds the pipe
	<-drained

	switch {
	case err == nil:
		return nil
	case killed:
		return fmt.Errorf("stdio: child process did not exit within %v of its stdin closing and was killed: %w",
			max(p.grace, 0), err)
	}
	return fmt.Errorf("stdio: child process: %w", err)
}
