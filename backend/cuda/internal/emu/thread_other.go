//go:build !linux

package emu

// threadID cannot tell threads apart here: the emulator then does not check
// that the context is current on the calling thread.
func threadID() int { return 0 }
