//go:build linux

package emu

import "syscall"

// threadID is the calling OS thread's id.
func threadID() int { return syscall.Gettid() }
