//go:build !linux

package gatewayproc

import "syscall"

// ChildSysProcAttr has nothing to add outside Linux, where a child outlives
// a parent that dies without stopping it.
func ChildSysProcAttr() *syscall.SysProcAttr { return nil }
