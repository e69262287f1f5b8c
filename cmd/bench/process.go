package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/modelgate/modelgate/internal/gatewayproc"
)

// proc is a process the bench started: the mock, the proxy or the gateway.
type proc struct {
	name  string
	cmd   *exec.Cmd
	stdin io.Closer // our children stop when it closes; nil for the gateway
	addr  string    // host:port it listens on
	done  chan struct{}
	err   error // the exit status, once done is closed
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) wait() {
	p.err = p.cmd.Wait()
	close(p.done)
}

// stop ends the process: stdin EOF for our children, SIGTERM for the
// gateway (which then drains and flushes its logs), SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	if p == nil || p.exited() {
		return
	}
	if p.stdin != nil {
		p.stdin.Close()
	} else {
		p.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-p.done:
	case <-time.After(grace):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// startChild re-executes the bench binary in a hidden mode and waits for the
// address it listens on.
func startChild(ctx context.Context, mode string, args ...string) (*proc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", mode, err)
	}
	cmd := exec.Command(exe, append([]string{"-mode=" + mode, "-addr=127.0.0.1:0"}, args...)...)
	cmd.Env = gatewayproc.ChildEnv()
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = gatewayproc.ChildSysProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", mode, err)
	}
	p := &proc{name: mode, cmd: cmd, stdin: stdin, done: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		br := bufio.NewReader(stdout)
		line, _ := br.ReadString('\n')
		lines <- line
		io.Copy(io.Discard, br)
		p.wait() // after stdout is drained, as exec.Cmd requires
	}()
	select {
	case line := <-lines:
		addr, ok := strings.CutPrefix(strings.TrimSpace(line), readyPrefix)
		if !ok {
			p.stop(time.Second)
			return nil, fmt.Errorf("start %s: it printed %q instead of its address", mode, line)
		}
		p.addr = addr
		return p, nil
	case <-time.After(10 * time.Second):
	case <-ctx.Done():
	}
	p.stop(time.Second)
	return nil, fmt.Errorf("start %s: no address within 10 s", mode)
}
