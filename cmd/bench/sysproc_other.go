//go:build !linux

package main

import "syscall"

// childSysProcAttr has nothing to add outside Linux; the bench reads /proc
// and so measures on Linux only.
func childSysProcAttr() *syscall.SysProcAttr { return nil }
