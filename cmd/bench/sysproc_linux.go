package main

import "syscall"

// childSysProcAttr kills a child when the bench dies without stopping it
// (Linux sends the signal when the parent exits).
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
