//go:build linux

// Our Linux half of Argo v4.0.5's workflow/executor/osspecific package. In Argo's repository the
// Linux file is a symbolic link to the Darwin one, and module zips carry no symbolic links, so
// the module the proxy serves does not build for Linux. kfp-build.sh adds this file to the
// package with `go build -overlay`; it provides the same four names for Linux.
package osspecific

import (
	"os"
	"syscall"
	"time"

	"github.com/argoproj/argo-workflows/v4/util/errors"
)

// Term is the signal that asks a process to stop.
var Term = syscall.SIGTERM

// CanIgnoreSignal tells the signals the executor does not forward to its child.
func CanIgnoreSignal(sig os.Signal) bool {
	switch sig {
	case syscall.SIGCHLD, syscall.SIGURG:
		return true
	}
	return false
}

// Kill signals the process group of pid, or pid alone when its group cannot be read.
func Kill(pid int, sig syscall.Signal) error {
	if group, err := syscall.Getpgid(pid); err == nil {
		return syscall.Kill(-group, sig)
	}
	return syscall.Kill(pid, sig)
}

// Setpgid starts the child in a process group of its own.
func Setpgid(attr *syscall.SysProcAttr) {
	attr.Setpgid = true
}

// Wait releases the child and reaps exited processes (as PID 1 must) until the child is among
// them; its exit status becomes an ExitErr (128+signal when it was killed).
func Wait(child *os.Process) error {
	pid := child.Pid
	if err := child.Release(); err != nil {
		return err
	}
	for {
		var status syscall.WaitStatus
		reaped, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		switch {
		case err != nil:
			return err
		case reaped == pid && status.Exited():
			return errors.NewExitErr(status.ExitStatus())
		case reaped == pid && status.Signaled():
			return errors.NewExitErr(128 + int(status.Signal()))
		case reaped > 0:
			continue // another zombie reaped: look again at once
		}
		time.Sleep(time.Second)
	}
}
