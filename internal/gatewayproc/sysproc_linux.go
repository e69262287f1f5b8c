package gatewayproc

import "syscall"

// ChildSysProcAttr kills a child when the program that started it dies
// without stopping it (Linux sends the signal when the parent exits).
func ChildSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
